package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedhelper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

// Labels the controller puts on its pods, as upstream.
const (
	RevisionHashLabel     = appsv1.ControllerRevisionHashLabelKey
	templateGenerationKey = appsv1.DeprecatedTemplateGeneration
)

// defaultTolerations are added to every daemon pod, as upstream's
// AddOrUpdateDaemonPodTolerations: daemons survive node conditions that
// would evict or block ordinary pods.
func defaultTolerations(hostNetwork bool) []corev1.Toleration {
	t := []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	}
	if hostNetwork {
		t = append(t, corev1.Toleration{Key: corev1.TaintNodeNetworkUnavailable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	}
	return t
}

func addTolerations(existing, extra []corev1.Toleration) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), existing...)
	for _, e := range extra {
		found := false
		for i := range out {
			if out[i].Key == e.Key && out[i].Effect == e.Effect {
				found = true
				break
			}
		}
		if !found {
			out = append(out, e)
		}
	}
	return out
}

// newPodTemplate is the pod a DaemonSet runs, before pinning to a node.
func newPodTemplate(ds *appsv1.DaemonSet, hash string) *corev1.PodTemplateSpec {
	t := ds.Spec.Template.DeepCopy()
	t.Spec.Tolerations = addTolerations(t.Spec.Tolerations, defaultTolerations(t.Spec.HostNetwork))
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[RevisionHashLabel] = hash
	t.Labels[templateGenerationKey] = itoa(ds.Generation)
	return t
}

// pinToNode replaces the required node affinity with a term matching only
// nodeName (upstream's ReplaceDaemonSetPodNodeNameNodeAffinity).
func pinToNode(spec *corev1.PodSpec, nodeName string) {
	term := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{nodeName},
	}}}
	if spec.Affinity == nil {
		spec.Affinity = &corev1.Affinity{}
	}
	if spec.Affinity.NodeAffinity == nil {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
}

// targetNode is the node a daemon pod is for: its nodeName once bound,
// else the node its pinning affinity names.
func targetNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// shouldRun reports whether a new daemon pod belongs on node, and whether
// an existing one may stay.
func shouldRun(template *corev1.PodTemplateSpec, node *corev1.Node) (run, keep bool) {
	if template.Spec.NodeName != "" && template.Spec.NodeName != node.Name {
		return false, false
	}
	pod := &corev1.Pod{Spec: template.Spec}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil || !ok {
		return false, false
	}
	_, untoleratedNoExecute := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, template.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false)
	if untoleratedNoExecute {
		return false, false
	}
	_, untolerated := schedhelper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, template.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoSchedule }, false)
	return !untolerated, true
}

func templateHash(ds *appsv1.DaemonSet) string {
	return podcontrol.ComputeHash(&ds.Spec.Template, ds.Status.CollisionCount)
}

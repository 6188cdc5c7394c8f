package daemonset

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

// allowsSurge: a RollingUpdate whose maxSurge is not zero (nor 0%).
func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true)
	return err == nil && v > 0
}

// maxSurge is rollingUpdate.maxSurge scaled to the eligible nodes
// (rounded up); 0 when the strategy does not surge.
func maxSurge(ds *appsv1.DaemonSet, nodes []*corev1.Node, template *corev1.PodTemplateSpec) int {
	if !allowsSurge(ds) {
		return 0
	}
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	desired := 0
	for _, n := range nodes {
		if run, _ := shouldRun(template, n); run {
			desired++
		}
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
	if err != nil {
		return 0
	}
	return v
}

// duplicates returns which of a node's live pods to delete. Without surge
// the oldest stays. With surge an old and a new pod may run together
// until the new one is available (or the old one is not even ready), as
// upstream.
func (dc *Controller) duplicates(ds *appsv1.DaemonSet, live []*corev1.Pod, hash string) []*corev1.Pod {
	sort.SliceStable(live, func(i, j int) bool { return live[i].CreationTimestamp.Before(&live[j].CreationTimestamp) })
	if !allowsSurge(ds) {
		return live[1:]
	}
	var del []*corev1.Pod
	var oldestNew, oldestOld *corev1.Pod
	for _, p := range live {
		switch {
		case p.Labels[RevisionHashLabel] == hash && oldestNew == nil:
			oldestNew = p
		case p.Labels[RevisionHashLabel] != hash && oldestOld == nil:
			oldestOld = p
		default:
			del = append(del, p)
		}
	}
	if oldestNew != nil && oldestOld != nil &&
		(!podcontrol.IsPodReady(oldestOld) || podcontrol.IsPodAvailable(oldestNew, ds.Spec.MinReadySeconds, dc.Clock.Now())) {
		del = append(del, oldestOld)
	}
	return del
}

// surgeNodes picks the nodes that get a new pod beside their old one: any
// node whose old pod is unavailable (within maxUnavailable), then nodes
// with an available old pod while fewer than maxSurge surges are running.
func (dc *Controller) surgeNodes(ds *appsv1.DaemonSet, nodes []*corev1.Node, byNode map[string][]*corev1.Pod, hash string, template *corev1.PodTemplateSpec, surge int) []string {
	maxUnavailable := 0
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		desired := 0
		for _, n := range nodes {
			if run, _ := shouldRun(template, n); run {
				desired++
			}
		}
		if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true); err == nil {
			maxUnavailable = v
		}
	}
	now := dc.Clock.Now()
	var create, candidates []string
	surging, unavailable := 0, 0
	for _, n := range nodes {
		if run, _ := shouldRun(template, n); !run {
			continue
		}
		var newPod, oldPod *corev1.Pod
		for _, p := range alive(byNode[n.Name]) {
			if p.Labels[RevisionHashLabel] == hash {
				newPod = p
			} else {
				oldPod = p
			}
		}
		switch {
		case oldPod == nil:
		case newPod != nil:
			surging++ // replacement not yet available
		case !podcontrol.IsPodAvailable(oldPod, ds.Spec.MinReadySeconds, now):
			if unavailable < maxUnavailable {
				create = append(create, n.Name)
				unavailable++
			} else {
				candidates = append(candidates, n.Name)
			}
		default:
			candidates = append(candidates, n.Name)
		}
	}
	for _, n := range candidates {
		if surging >= surge {
			break
		}
		create = append(create, n)
		surging++
	}
	return create
}

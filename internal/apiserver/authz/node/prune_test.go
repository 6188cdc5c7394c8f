package node

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

// referencingPod refers to an object of every kind the graph knows, from
// every place a pod can, beside everything a running pod carries that the
// graph does not read.
func referencingPod() *corev1.Pod {
	envFrom := func(s string) []corev1.EnvFromSource {
		return []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s + "-env-secret"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: s + "-env-cm"}}},
		}
	}
	env := func(s string) []corev1.EnvVar {
		return []corev1.EnvVar{
			{Name: "PLAIN", Value: "x"},
			{Name: "S", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s + "-key-secret"}, Key: "k"}}},
			{Name: "C", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s + "-key-cm"}, Key: "k"}}},
		}
	}
	container := func(name string) corev1.Container {
		return corev1.Container{
			Name: name, Image: "registry.k8s.io/pause:3.10", Command: []string{"/pause"}, Args: []string{"-v"},
			Ports:         []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			Env:           env(name),
			EnvFrom:       envFrom(name),
			Resources:     corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			VolumeMounts:  []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/cfg"}},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz"}}},
		}
	}
	p := pod("ns", "p", "node-a")
	p.Labels = map[string]string{"app": "web", "pod-template-hash": "abc"}
	p.Annotations = map[string]string{"note": "kept"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs-uid", Controller: ptr.To(true)}}
	p.Finalizers = []string{"example.com/f"}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	p.Spec.ServiceAccountName = "web-sa"
	p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull-secret"}}
	p.Spec.Containers = []corev1.Container{container("main"), container("side")}
	p.Spec.InitContainers = []corev1.Container{container("init")}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", Env: env("debug"), EnvFrom: envFrom("debug"),
	}, TargetContainerName: "main"}}
	p.Spec.Volumes = []corev1.Volume{
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
		{Name: "claim", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
		{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
		}}}},
		{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-secret"}}}},
	}
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "gpu", ResourceClaimName: ptr.To("gpu-claim")},
		{Name: "tpl", ResourceClaimTemplateName: ptr.To("tpl")},
	}
	p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	p.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		PodIP:      "10.0.0.7", HostIP: "192.168.0.1",
		ContainerStatuses:           []corev1.ContainerStatus{{Name: "main", Ready: true, Image: "registry.k8s.io/pause:3.10", ImageID: "sha256:abc"}},
		ResourceClaimStatuses:       []corev1.PodResourceClaimStatus{{Name: "tpl", ResourceClaimName: ptr.To("p-tpl-x")}},
		ExtendedResourceClaimStatus: &corev1.PodExtendedResourceClaimStatus{ResourceClaimName: "p-extended"},
	}
	return p
}

// A pod decoded without podGraphSkip has exactly the edges of the whole
// pod: the set names nothing podEdgesOf reads.
func TestPrunedPodHasTheSameEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"every reference", referencingPod()},
		{"typical", benchPod(7)},
		{"density", densityPod()},
		{"mirror pod", func() *corev1.Pod {
			p := referencingPod()
			p.Annotations[corev1.MirrorPodAnnotationKey] = "x"
			return p
		}()},
		{"unscheduled", func() *corev1.Pod { p := referencingPod(); p.Spec.NodeName = ""; return p }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, err := tc.pod.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			pruned, ok := protoprune.Compile(podGraphSkip).Append(nil, whole)
			if !ok {
				t.Fatal("the pod's message did not parse")
			}
			var got corev1.Pod
			if err := got.Unmarshal(pruned); err != nil {
				t.Fatal(err)
			}
			var want, have podEdges
			podEdgesOf(tc.pod, &want)
			podEdgesOf(&got, &have)
			if fmt.Sprint(want) != fmt.Sprint(have) {
				t.Errorf("edges of the pruned pod\n%v\nwant those of the whole pod\n%v", have, want)
			}
			if tc.name == "every reference" && (got.Status.Conditions != nil || got.Spec.Containers[0].Image != "" || got.ManagedFields != nil || got.Labels != nil) {
				t.Errorf("pruned pod kept conditions %v, image %q, managedFields %v or labels %v, which the graph does not read",
					got.Status.Conditions, got.Spec.Containers[0].Image, got.ManagedFields, got.Labels)
			}
		})
	}
}

// Most of a typical stored pod's bytes are what the graph does not read.
func TestPruningTakesMostOfAPod(t *testing.T) {
	whole, err := densityPod().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pruned, _ := protoprune.Compile(podGraphSkip).Append(nil, whole)
	if len(pruned) > len(whole)/3 {
		t.Errorf("pruned pod is %d of the whole's %d bytes, want at most a third", len(pruned), len(whole))
	}
}

func TestAllBut(t *testing.T) {
	inner := protoprune.Fields{2: nil}
	got := allBut(4, map[protowire.Number]protoprune.Fields{1: nil, 3: inner})
	keys := slices.Sorted(maps.Keys(got))
	if want := []protowire.Number{2, 3, 4}; !slices.Equal(keys, want) {
		t.Fatalf("fields %v, want %v", keys, want)
	}
	if got[2] != nil || got[4] != nil || len(got[3]) != 1 {
		t.Errorf("allBut = %v, want 2 and 4 whole and 3 pruned by %v", got, inner)
	}
}

// densityPod is a stored pod as the density benchmark leaves it: made by
// a ReplicaSet from a one-container template, bound, Running, with its
// creator's and its node's managedFields.
func densityPod() *corev1.Pod {
	p := benchPod(4242)
	p.Labels = map[string]string{"app": "density-17", "pod-template-hash": "5d8f7c9b6"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "density-17-5d8f7c9b6", UID: "0b6c3d1e-7f2a-4c89-9e61-2d4f5a6b7c8d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	p.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	p.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("10Mi")}}
	p.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	fields := func(n int) *metav1.FieldsV1 {
		raw := []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{}},"f:ownerReferences":{}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{}}}}`)
		for range n {
			raw = append(raw, `,"f:x":{}`...)
		}
		return &metav1.FieldsV1{Raw: raw}
	}
	now := metav1.Now()
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: fields(60)},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: fields(40), Subresource: "status"},
	}
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, HostIP: "10.64.16.7", PodIP: "10.128.66.9", StartTime: &now, QOSClass: corev1.PodQOSBurstable,
		HostIPs: []corev1.HostIP{{IP: "10.64.16.7"}}, PodIPs: []corev1.PodIP{{IP: "10.128.66.9"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Ready: true, Started: ptr.To(true), Image: "registry.k8s.io/pause:3.10", ImageID: "sha256:873ed75102791e5b0b8a7fcd41606c92fcec98d56d05ead4ac5131650004c136", ContainerID: "containerd://4f7b2c9d", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
	}
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	return p
}

// BenchmarkPodDecode is what the graph's list after a restart pays to
// decode one stored pod, whole or without podGraphSkip (the pruning
// included).
func BenchmarkPodDecode(b *testing.B) {
	msg, err := densityPod().Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var p corev1.Pod
			if err := p.Unmarshal(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	plan := protoprune.Compile(podGraphSkip)
	b.Run("pruned", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var ok bool
			if buf, ok = plan.Append(buf[:0], msg); !ok {
				b.Fatal("did not parse")
			}
			var p corev1.Pod
			if err := p.Unmarshal(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}

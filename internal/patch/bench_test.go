package patch

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PATCH and every write's managedFields tracking are on the API server's
// write path; these keep an eye on their cost for a typical Pod.

func BenchmarkApply(b *testing.B) {
	for _, tc := range []struct {
		pt    types.PatchType
		patch string
	}{
		{types.JSONPatchType, `[{"op":"replace","path":"/spec/containers/1/image","value":"redis:2"}]`},
		{types.MergePatchType, `{"metadata":{"labels":{"tier":"front"}}}`},
		{types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"b","image":"redis:2"}]}}`},
	} {
		b.Run(string(tc.pt), func(b *testing.B) {
			pod, patch := testPod(), []byte(tc.patch)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Apply(tc.pt, pod, patch, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFieldManagersUpdate(b *testing.B) {
	f := newFieldManagers(b)
	created, err := f.Update(&corev1.Pod{}, testPod(), "creator", "")
	if err != nil {
		b.Fatal(err)
	}
	live := created.(*corev1.Pod)
	live.UID = "uid-1"
	edited := live.DeepCopy()
	edited.Spec.Containers[1].Image = "redis:2"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Update(live, edited.DeepCopy(), "editor", ""); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFieldManagersApply(b *testing.B) {
	f := newFieldManagers(b)
	live, _, err := f.Apply(&corev1.Pod{}, podConfig("nginx:1"), "alice", ApplyOptions{})
	if err != nil {
		b.Fatal(err)
	}
	config := podConfig("nginx:2")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.Apply(live, config, "alice", ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPod is the pod `myriad bench api` creates.
func benchPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       "apibench-1",
			Name:            "bench-abcdef-00000001",
			Labels:          map[string]string{"app": "app-1", "pod-template-hash": "5d4f8c9b7", "tier": "backend"},
			Annotations:     map[string]string{"kubernetes.io/config.seen": "2026-11-22T04:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-1-5d4f8c9b7", UID: "11111111-2222-3333-4444-555555555555"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name:  "main",
				Image: "registry.example.com/team/app-1:v1.2.3",
				Args:  []string{"--port=8080", "--log-level=info"},
				Env:   []corev1.EnvVar{{Name: "POD_NAME", Value: "x"}, {Name: "MODE", Value: "production"}},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts:             []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				TerminationMessagePath:   corev1.TerminationMessagePathDefault,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy:          corev1.PullIfNotPresent,
			}},
			Volumes:                       []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}},
			ServiceAccountName:            "default",
			RestartPolicy:                 corev1.RestartPolicyAlways,
			DNSPolicy:                     corev1.DNSClusterFirst,
			SchedulerName:                 corev1.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext:               &corev1.PodSecurityContext{},
		},
	}
}

// BenchmarkFieldManagersCreate is the managedFields part of a pod create.
func BenchmarkFieldManagersCreate(b *testing.B) {
	f := newFieldManagers(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Update(&corev1.Pod{}, benchPod(), "apibench", ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFieldManagersRenew is the managedFields part of a Lease-like
// renewal: the one manager changes a field it already owns.
func BenchmarkFieldManagersRenew(b *testing.B) {
	f := newFieldManagers(b)
	created, err := f.Update(&corev1.Pod{}, benchPod(), "kubelet", "")
	if err != nil {
		b.Fatal(err)
	}
	live := created.(*corev1.Pod)
	live.UID = "uid-1"
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		edited := live.DeepCopy()
		edited.Annotations["kubernetes.io/config.seen"] = fmt.Sprint(i)
		if _, err := f.Update(live, edited, "kubelet", ""); err != nil {
			b.Fatal(err)
		}
	}
}

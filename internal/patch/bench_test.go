package patch

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
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

// benchPod is a pod as its ReplicaSet creates it: benchutil.StoredPod
// without what the server and the kubelet add later.
func benchPod() *corev1.Pod {
	p := benchutil.StoredPod(1, "apibench-1", 10000)
	p.UID, p.ManagedFields, p.Status = "", nil, corev1.PodStatus{}
	p.Annotations = map[string]string{"kubernetes.io/config.seen": "2026-11-22T04:00:00Z"}
	return p
}

// BenchmarkFieldManagersCreate is the managedFields part of a pod create:
// upstream's comparison (update), a create of a pod like one before it, as
// a ReplicaSet's (remembered), and of pods unlike each other (new; the
// memo's window keeps looking them up).
func BenchmarkFieldManagersCreate(b *testing.B) {
	b.Run("update", func(b *testing.B) {
		f := newFieldManagers(b)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Update(&corev1.Pod{}, benchPod(), "apibench", ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("remembered", func(b *testing.B) {
		f := newFieldManagers(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			p := benchPod()
			p.Name = fmt.Sprint("apibench-", i)
			if _, err := f.Create(&corev1.Pod{}, p, "apibench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new", func(b *testing.B) {
		f := newFieldManagers(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			p := benchPod()
			p.Labels["n"] = fmt.Sprint(i)
			f.created.kinds = nil // always in the window
			if _, err := f.Create(&corev1.Pod{}, p, "apibench"); err != nil {
				b.Fatal(err)
			}
		}
	})
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

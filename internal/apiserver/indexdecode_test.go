package apiserver

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
)

func podObjectStore(t testing.TB) *objectStore {
	t.Helper()
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	res, ok := reg.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if !ok {
		t.Fatal("no pods")
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return newObjectStore(res, nil, protobuf.NewSerializer(scheme, scheme), nil, nil)
}

// The cache's index decode keeps everything the index reads — the
// metadata less managedFields, the selectable fields — for pods with and
// without what it leaves out; what it cannot take apart is left to the
// full decode, which reports it.
func TestDecodeForIndex(t *testing.T) {
	o := podObjectStore(t)
	bare := benchutil.StoredPod(7, "ns", 10)
	bare.ManagedFields = nil
	bare.Spec = corev1.PodSpec{NodeName: "node-3"}
	bare.Status = corev1.PodStatus{}
	full := benchutil.StoredPod(7, "ns", 10)
	full.Spec.Volumes = []corev1.Volume{{Name: "data"}}
	full.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
	full.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	full.Spec.HostNetwork = true
	full.Status.NominatedNodeName = "node-9"
	full.Status.PodIPs = []corev1.PodIP{{IP: "10.9.9.9"}}
	for name, pod := range map[string]*corev1.Pod{"full": full, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			data, err := o.encode(pod)
			if err != nil {
				t.Fatal(err)
			}
			kv := storage.KeyValue{Key: "/core/pods/ns/" + pod.Name, Value: data, ModRevision: 42}
			decoded, err := o.decode(kv)
			if err != nil {
				t.Fatal(err)
			}
			want := decoded.(*corev1.Pod)
			obj, err := o.decodeForIndex(kv)
			if err != nil {
				t.Fatal(err)
			}
			got := obj.(*corev1.Pod)
			wantMeta := *want.ObjectMeta.DeepCopy()
			wantMeta.ManagedFields = nil
			if !equality.Semantic.DeepEqual(got.ObjectMeta, wantMeta) {
				t.Errorf("metadata differs from the full decode's less managedFields:\n got %+v\nwant %+v", got.ObjectMeta, wantMeta)
			}
			if g, w := o.res.SelectableFields(got), o.res.SelectableFields(want); !equality.Semantic.DeepEqual(g, w) {
				t.Errorf("selectable fields %v, want %v", g, w)
			}
			if got.Spec.Containers != nil || got.Spec.Volumes != nil || got.Status.ContainerStatuses != nil {
				t.Errorf("containers, volumes or container statuses decoded: %+v", got)
			}
			if got.ResourceVersion != "42" {
				t.Errorf("resourceVersion %q", got.ResourceVersion)
			}
		})
	}
	data, _ := o.encode(benchutil.StoredPod(1, "ns", 10))
	for name, v := range map[string][]byte{
		"garbage":   []byte("not protobuf at all"),
		"truncated": data[:len(data)/2],
		"empty":     nil,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := o.decodeForIndex(storage.KeyValue{Key: "/core/pods/ns/x", Value: v, ModRevision: 1})
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Errorf("got %v, want a corrupt-value error", err)
			}
		})
	}
}

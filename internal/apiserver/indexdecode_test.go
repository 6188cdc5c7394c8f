package apiserver

import (
	"bytes"
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
	return newObjectStore(res, nil, protobuf.NewSerializer(scheme, scheme), nil)
}

// The cache's index decode is the full decode less managedFields, for
// pods with and without them; what it cannot take apart is left to the
// full decode, which reports it.
func TestDecodeForIndex(t *testing.T) {
	o := podObjectStore(t)
	bare := benchutil.StoredPod(7, "ns", 10)
	bare.ManagedFields = nil
	for name, pod := range map[string]*corev1.Pod{"with managedFields": benchutil.StoredPod(7, "ns", 10), "without": bare} {
		t.Run(name, func(t *testing.T) {
			data, err := o.encode(pod)
			if err != nil {
				t.Fatal(err)
			}
			kv := storage.KeyValue{Key: "/core/pods/ns/" + pod.Name, Value: data, ModRevision: 42}
			full, err := o.decode(kv)
			if err != nil {
				t.Fatal(err)
			}
			got, err := o.decodeForIndex(kv)
			if err != nil {
				t.Fatal(err)
			}
			want := full.(*corev1.Pod)
			want.ManagedFields = nil
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("index decode differs from the full one less managedFields:\n got %+v\nwant %+v", got, want)
			}
			if got.(*corev1.Pod).ResourceVersion != "42" {
				t.Errorf("resourceVersion %q", got.(*corev1.Pod).ResourceVersion)
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

// FuzzWithoutManagedFields: whatever the bytes, no panic; what it accepts
// parses again and has no managedFields left.
func FuzzWithoutManagedFields(f *testing.F) {
	o := podObjectStore(f)
	data, _ := o.encode(benchutil.StoredPod(3, "ns", 10))
	msg, _ := unknownRaw(data)
	f.Add(msg)
	f.Add([]byte{0x0a, 0x02, 0x8a, 0x01})
	f.Fuzz(func(t *testing.T, msg []byte) {
		out, ok := withoutManagedFields(msg)
		if !ok {
			return
		}
		again, ok := withoutManagedFields(out)
		if !ok || !bytes.Equal(again, out) {
			t.Fatalf("output does not parse again unchanged")
		}
	})
}

package garbagecollector

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// TestObjectMeta: the collector reads the metadata of typed and
// metadata-only objects alike, without copying it.
func TestObjectMeta(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}}
	partial := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "u2"}}
	tests := []struct {
		name string
		obj  any
		want *metav1.ObjectMeta
	}{
		{"typed", pod, &pod.ObjectMeta},
		{"metadata-only", partial, &partial.ObjectMeta},
		{"tombstone", cache.DeletedFinalStateUnknown{Key: "p", Obj: pod}, nil},
		{"not an object", "p", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := objectMeta(tc.obj)
			if got != tc.want || ok != (tc.want != nil) {
				t.Errorf("objectMeta = %p, %v; want %p", got, ok, tc.want)
			}
		})
	}
	if cachedUID(pod) != "u1" || cachedUID("x") != "" {
		t.Error("cachedUID")
	}
}

// TestInformerFor: pods and nodes come from the typed factory (one copy
// with the controllers that read them typed), the rest metadata-only; with
// no typed factory everything is metadata-only.
func TestInformerFor(t *testing.T) {
	typed := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	md := metadatainformer.NewSharedInformerFactory(metadatafake.NewSimpleMetadataClient(runtime.NewScheme()), 0)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	rs := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	gc := &Controller{typedInformers: typed, metadataInformers: md}
	inf, isTyped, err := gc.informerFor(pods)
	if err != nil || !isTyped || inf.GetIndexer() != typed.Core().V1().Pods().Informer().GetIndexer() {
		t.Errorf("pods: typed %v, err %v: want the typed factory's pod informer", isTyped, err)
	}
	if inf, isTyped, err := gc.informerFor(rs); err != nil || isTyped || inf.GetIndexer() != md.ForResource(rs).Informer().GetIndexer() {
		t.Errorf("replicasets: typed %v, err %v: want the metadata informer", isTyped, err)
	}
	gc.typedInformers = nil
	if inf, isTyped, err := gc.informerFor(pods); err != nil || isTyped || inf.GetIndexer() != md.ForResource(pods).Informer().GetIndexer() {
		t.Errorf("pods without a typed factory: typed %v, err %v: want the metadata informer", isTyped, err)
	}
}

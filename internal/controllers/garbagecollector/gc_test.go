package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var (
	rsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	cmGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

func rs(name string, uid types.UID, finalizers ...string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid, Finalizers: finalizers},
	}
	if len(finalizers) > 0 {
		now := metav1.Now()
		m.DeletionTimestamp = &now
	}
	return m
}

func ownedBy(name string, uid types.UID, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: uid, BlockOwnerDeletion: &block}
}

func cm(name string, refs ...metav1.OwnerReference) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("cm-" + name), OwnerReferences: refs},
	}
}

func TestCollector(t *testing.T) {
	type want struct {
		gvr        schema.GroupVersionResource
		name       string
		gone       bool
		owners     []types.UID // remaining owner UIDs, when not gone
		finalizers []string
	}
	tests := []struct {
		name    string
		objects []runtime.Object
		want    []want
	}{
		{
			name:    "dependent of a missing owner is deleted",
			objects: []runtime.Object{cm("orphaned", ownedBy("gone", "uid-gone", false))},
			want:    []want{{gvr: cmGVR, name: "orphaned", gone: true}},
		},
		{
			name:    "dependent of a live owner stays",
			objects: []runtime.Object{rs("live", "uid-live"), cm("kept", ownedBy("live", "uid-live", true))},
			want:    []want{{gvr: cmGVR, name: "kept", owners: []types.UID{"uid-live"}}},
		},
		{
			name:    "owner with the same name but another UID is not the owner",
			objects: []runtime.Object{rs("reborn", "uid-new"), cm("stale", ownedBy("reborn", "uid-old", false))},
			want:    []want{{gvr: cmGVR, name: "stale", gone: true}},
		},
		{
			name:    "a live co-owner keeps it; the dangling reference goes",
			objects: []runtime.Object{rs("live", "uid-live"), cm("shared", ownedBy("live", "uid-live", false), ownedBy("gone", "uid-gone", false))},
			want:    []want{{gvr: cmGVR, name: "shared", owners: []types.UID{"uid-live"}}},
		},
		{
			name:    "orphan: references removed, then the finalizer",
			objects: []runtime.Object{rs("o", "uid-o", metav1.FinalizerOrphanDependents), cm("a", ownedBy("o", "uid-o", true)), cm("b", ownedBy("o", "uid-o", false))},
			want: []want{
				{gvr: cmGVR, name: "a", owners: nil}, {gvr: cmGVR, name: "b", owners: nil},
				{gvr: rsGVR, name: "o", finalizers: nil},
			},
		},
		{
			name:    "foreground: dependents deleted, then the finalizer",
			objects: []runtime.Object{rs("f", "uid-f", metav1.FinalizerDeleteDependents, "example.com/keep"), cm("a", ownedBy("f", "uid-f", true)), cm("b", ownedBy("f", "uid-f", false))},
			want: []want{
				{gvr: cmGVR, name: "a", gone: true}, {gvr: cmGVR, name: "b", gone: true},
				{gvr: rsGVR, name: "f", finalizers: []string{"example.com/keep"}},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			all := metav1.Verbs{"create", "delete", "get", "list", "patch", "watch"}
			client.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
				{GroupVersion: "v1", APIResources: []metav1.APIResource{
					{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
					{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
				}},
				{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "replicasets", Kind: "ReplicaSet", Namespaced: true, Verbs: all}}},
			}
			scheme := runtime.NewScheme()
			for _, gvk := range []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Group: "apps", Version: "v1", Kind: "ReplicaSet"}} {
				scheme.AddKnownTypeWithName(gvk, &metav1.PartialObjectMetadata{})
				scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), &metav1.PartialObjectMetadataList{})
			}
			md := metadatafake.NewSimpleMetadataClient(scheme, tc.objects...)
			gc, err := New(&controllerctx.Context{
				Client: client, Metadata: md, MetadataInformers: metadatainformer.NewSharedInformerFactory(md, 0),
				Clock: clock.RealClock{}, Logger: slog.Default(),
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() { gc.Run(ctx, 2); close(done) }()
			defer func() { cancel(); <-done }()
			testGets := 0
			check := func(final bool) {
				for _, w := range tc.want {
					for {
						testGets++
						m, err := md.Resource(w.gvr).Namespace("ns").Get(ctx, w.name, metav1.GetOptions{})
						var ok bool
						if w.gone {
							ok = err != nil
						} else if err == nil {
							var owners []types.UID
							for _, r := range m.OwnerReferences {
								owners = append(owners, r.UID)
							}
							ok = slices.Equal(owners, w.owners) && slices.Equal(m.Finalizers, w.finalizers)
						}
						if ok {
							break
						}
						if final || ctx.Err() != nil {
							t.Fatalf("%s %s: not as wanted (%+v): object %+v err %v", w.gvr.Resource, w.name, w, m, err)
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
			check(false)
			// Once the caches have synced and the queues drained, nothing may
			// have moved past the wanted state.
			select {
			case <-gc.warmed:
			case <-ctx.Done():
				t.Fatal("never warmed")
			}
			for !gc.monitors.synced() || gc.attemptToDelete.Len()+gc.attemptToOrphan.Len() > 0 {
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			check(true)
			if tc.name == "dependent of a live owner stays" {
				// Settled from the cache: no live reads, no writes.
				gets := 0
				for _, a := range md.Actions() {
					switch a.GetVerb() {
					case "list", "watch":
					case "get":
						gets++
					default:
						t.Fatalf("API call %s %s for an object with a live owner", a.GetVerb(), a.GetResource().Resource)
					}
				}
				if gets != testGets {
					t.Fatalf("the collector read %d objects live for an object with a live owner", gets-testGets)
				}
			}
			if gc.monitors.forGVR(schema.GroupVersionResource{Version: "v1", Resource: "events"}) != nil {
				t.Fatal("events are monitored")
			}
		})
	}
}

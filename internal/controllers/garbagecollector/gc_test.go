package garbagecollector

import (
	"context"
	"errors"
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
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
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

// want is an object's wanted state after collection.
type want struct {
	gvr        schema.GroupVersionResource
	name       string
	gone       bool
	owners     []types.UID // remaining owner UIDs, when not gone
	finalizers []string
}

func TestCollector(t *testing.T) {
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
			stopped := false
			defer func() {
				if !stopped {
					cancel()
					<-done
				}
			}()
			testGets := 0
			check := func(final bool) {
				for _, w := range tc.want {
					for {
						testGets++
						m, err := md.Resource(w.gvr).Namespace("ns").Get(context.Background(), w.name, metav1.GetOptions{})
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
							// ctx ends after 10 s: the wanted state never came.
							t.Fatalf("%s %s: not as wanted (%+v): object %+v err %v", w.gvr.Resource, w.name, w, m, err)
						}
						time.Sleep(10 * time.Millisecond)
					}
				}
			}
			check(false)
			// Wait for the collector's caches to show the wanted state too.
			for !cacheAgrees(gc, tc.want) {
				if ctx.Err() != nil {
					t.Fatal("the collector's caches never showed the wanted state")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Stop the collector, joining its workers, so nothing is in
			// flight while the API calls are counted and every object is
			// processed once more below.
			cancel()
			<-done
			stopped = true
			// Nothing may move past the wanted state: process every object
			// the handlers would queue once more, as late or repeated
			// events would.
			for _, mon := range gc.monitors.all() {
				for _, o := range mon.informer.GetIndexer().List() {
					m := o.(*metav1.PartialObjectMetadata)
					it := itemFor(mon.res.GVR, &m.ObjectMeta)
					if len(m.OwnerReferences) > 0 || slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
						if err := gc.processDelete(context.Background(), it); err != nil && !errors.Is(err, reconcile.ErrRequeue) {
							t.Fatalf("processing %v again: %v", it, err)
						}
					}
					if slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents) {
						if err := gc.processOrphan(context.Background(), it); err != nil {
							t.Fatalf("orphaning %v again: %v", it, err)
						}
					}
				}
			}
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

// cacheAgrees reports whether gc's informers show every wanted state.
func cacheAgrees(gc *Controller, wants []want) bool {
	for _, w := range wants {
		mon := gc.monitors.forGVR(w.gvr)
		if mon == nil {
			return false
		}
		o, exists, _ := mon.informer.GetIndexer().GetByKey("ns/" + w.name)
		if w.gone {
			if exists {
				return false
			}
			continue
		}
		if !exists {
			return false
		}
		m := o.(*metav1.PartialObjectMetadata)
		var owners []types.UID
		for _, r := range m.OwnerReferences {
			owners = append(owners, r.UID)
		}
		if !slices.Equal(owners, w.owners) || !slices.Equal(m.Finalizers, w.finalizers) {
			return false
		}
	}
	return true
}

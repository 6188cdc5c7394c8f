package controlplane

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// The in-process components (the scheduler and the controller manager of
// `myriad up`) share one informer factory, so the process holds one
// decoded copy of each pod and node instead of one per component: at
// 200,000 pods every copy is most of a gigabyte. The factory's hottest
// types are fed straight from the API server's watch caches (no HTTP, no
// encode, no second decode: a watch event's object is decoded once for
// every in-process watcher); the rest go over the loopback like any
// client's. Reads bypass authorization either way, as the API server's own
// in-process readers do: the components are part of this process, and
// what they write still goes through their own identities and RBAC.

// watchCaches is where the shared factory's in-process informers list and
// watch: the API server (apiserver.Server satisfies it).
type watchCaches interface {
	ListerWatcher(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error)
}

// inProcessType is a type the shared factory reads from the watch cache.
type inProcessType struct {
	gvr schema.GroupVersionResource
	obj runtime.Object
}

// inProcessTypes are what the scheduler watches, which the controllers
// watch too: pods and nodes (the bulk of the objects), and the small
// PodDisruptionBudget and volume caches. An informer registered here
// starts whenever the factory does, asked for or not, so only types that
// both components read belong here; the controllers' other types go over
// the loopback, started only when a controller asks for them.
func inProcessTypes() []inProcessType {
	return []inProcessType{
		{corev1.SchemeGroupVersion.WithResource("pods"), &corev1.Pod{}},
		{corev1.SchemeGroupVersion.WithResource("nodes"), &corev1.Node{}},
		{policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), &policyv1.PodDisruptionBudget{}},
		{corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), &corev1.PersistentVolumeClaim{}},
		{corev1.SchemeGroupVersion.WithResource("persistentvolumes"), &corev1.PersistentVolume{}},
		{storagev1.SchemeGroupVersion.WithResource("storageclasses"), &storagev1.StorageClass{}},
	}
}

// sharedInformers owns the factory the in-process components share: it
// outlives every component (its informers stop only after the last
// component has returned), and a component's Start and Shutdown of it
// do not reach its informers' lifetime (componentFactory).
type sharedInformers struct {
	factory informers.SharedInformerFactory
	ctx     context.Context
	cancel  context.CancelFunc
	once    sync.Once
}

// newComponentInformers builds the factory components share, reading as
// the one that ReadsShared (configs[i] is components[i]'s loopback).
// Without components there is nothing to share: the result's stop does
// nothing.
func newComponentInformers(components []Component, configs []*rest.Config, src watchCaches) (*sharedInformers, error) {
	if len(components) == 0 {
		return &sharedInformers{}, nil
	}
	reader := configs[0]
	for i, c := range components {
		if c.ReadsShared {
			reader = configs[i]
			break
		}
	}
	return newSharedInformers(src, reader)
}

// newSharedInformers builds the shared factory over src, with a loopback
// client acting as reader's identity for the types not read in-process.
func newSharedInformers(src watchCaches, reader *rest.Config) (*sharedInformers, error) {
	rc := rest.CopyConfig(reader)
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	rc.UserAgent = "myriad-shared-informers"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("shared informers: client: %w", err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trim))
	for _, t := range inProcessTypes() {
		cacheLW, err := src.ListerWatcher(t.gvr)
		if err != nil {
			return nil, fmt.Errorf("shared informers: %w", err)
		}
		lw := ownEvents{toolscache.ToListerWatcherWithContext(cacheLW)}
		obj, desc := t.obj, t.gvr.String()
		// The factory keeps the first informer registered for a type, so
		// the typed accessors the components call return these.
		f.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer {
			return toolscache.NewSharedIndexInformerWithOptions(lw, obj, toolscache.SharedIndexInformerOptions{
				Indexers:          toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
				ObjectDescription: desc,
			})
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &sharedInformers{factory: f, ctx: ctx, cancel: cancel}, nil
}

// forComponents is the factory handed to each component.
func (s *sharedInformers) forComponents() informers.SharedInformerFactory {
	return componentFactory{SharedInformerFactory: s.factory, stop: s.ctx.Done()}
}

// stop ends the informers and waits for them; call it after every
// component has returned, and before the API server's caches stop.
func (s *sharedInformers) stop() {
	s.once.Do(func() {
		if s.factory == nil {
			return
		}
		s.cancel()
		s.factory.Shutdown()
	})
}

// componentFactory is the shared factory as a component sees it. A
// component starts the factory as it would its own, to start the
// informers it asked for, but they run until the owner stops them, not
// until that component's context ends: the other components read them
// too. Shutdown is the owner's.
type componentFactory struct {
	informers.SharedInformerFactory
	stop <-chan struct{}
}

func (f componentFactory) Start(<-chan struct{}) { f.SharedInformerFactory.Start(f.stop) }

func (componentFactory) Shutdown() {}

// trim is the shared factory's transform: it drops managedFields (no
// component reads them; they are a third of a pod) and the type's
// apiVersion and kind (the typed client's objects have none, and the
// components expect none). It modifies obj, which is the informer's own:
// a fresh decode, or a watch cache's event copied by ownEvents.
func trim(obj any) (any, error) {
	if ro, ok := obj.(runtime.Object); ok {
		ro.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	if m, ok := obj.(metav1.ObjectMetaAccessor); ok && m.GetObjectMeta().GetManagedFields() != nil {
		m.GetObjectMeta().SetManagedFields(nil)
	}
	return obj, nil
}

// ownEvents is a watch cache's ListerWatcher whose watch events the
// informer may trim. A list is decoded for its caller, but a watch event's
// object is shared with every watcher of the cache, HTTP ones included
// that may not have encoded it yet, so each is replaced by a shallow copy
// without managedFields: the top-level struct is the informer's, the maps
// and slices stay shared, read-only as everything in an informer's store
// is.
type ownEvents struct {
	toolscache.ListerWatcherWithContext
}

var _ toolscache.ListerWatcher = ownEvents{}

func (lw ownEvents) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw ownEvents) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw ownEvents) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := lw.ListerWatcherWithContext.WatchWithContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	return watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
		ev.Object = ownCopy(ev.Object)
		return ev, true
	}), nil
}

// ownCopy is a shallow copy of obj without managedFields and kind, or obj
// itself when it has neither (nothing to trim: the copy would buy nothing)
// or is not a pointer to a struct with ObjectMeta (a bookmark's, a
// Status).
func ownCopy(obj runtime.Object) runtime.Object {
	acc, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok || (acc.GetObjectMeta().GetManagedFields() == nil && obj.GetObjectKind().GroupVersionKind().Empty()) {
		return obj
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return obj
	}
	cp := reflect.New(v.Elem().Type())
	cp.Elem().Set(v.Elem())
	out, ok := cp.Interface().(runtime.Object)
	if !ok {
		return obj
	}
	out.(metav1.ObjectMetaAccessor).GetObjectMeta().SetManagedFields(nil)
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out
}

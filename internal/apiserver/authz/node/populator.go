package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

// Source is where the graph reads the API's objects: the apiserver's
// in-process ListerWatcher (apiserver.Server satisfies it).
type Source interface {
	// ListerWatcher lists and watches gvr; an error means gvr is not
	// served, and the graph does without it.
	ListerWatcher(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error)
}

// prunedSource is a Source whose lists can leave out what the graph does
// not read (apiserver.Server's PrunedListerWatcher).
type prunedSource interface {
	PrunedListerWatcher(gvr schema.GroupVersionResource, skip protoprune.Fields) (toolscache.ListerWatcher, error)
}

var (
	podsGVR              = corev1.SchemeGroupVersion.WithResource("pods")
	pvsGVR               = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
	volumeAttachmentsGVR = storagev1.SchemeGroupVersion.WithResource("volumeattachments")
	resourceSlicesGVR    = resourcev1.SchemeGroupVersion.WithResource("resourceslices")
)

// populator runs one reflector per resource the graph is built from, each
// with a graphStore as its store: events go straight into the graph and
// no object is kept.
type populator struct {
	log    *slog.Logger
	stores []*graphStore
	refls  []*toolscache.Reflector

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

func newPopulator(g *Graph, src Source, log *slog.Logger) (*populator, error) {
	p := &populator{log: log}
	for _, r := range []struct {
		gvr      schema.GroupVersionResource
		obj      runtime.Object
		required bool
	}{
		{podsGVR, &corev1.Pod{}, true},
		{pvsGVR, &corev1.PersistentVolume{}, true},
		{volumeAttachmentsGVR, &storagev1.VolumeAttachment{}, false},
		{resourceSlicesGVR, &resourcev1.ResourceSlice{}, false},
	} {
		lw, err := listerWatcher(src, r.gvr)
		if err != nil {
			if r.required {
				return nil, fmt.Errorf("node authorizer: watching %s: %w", r.gvr.Resource, err)
			}
			continue // not served: nothing of it can lead to a node
		}
		s := &graphStore{g: g, resource: r.gvr.Resource, log: log}
		p.stores = append(p.stores, s)
		p.refls = append(p.refls, toolscache.NewReflectorWithOptions(lw, r.obj, s, toolscache.ReflectorOptions{
			Name:            "node-authorizer-" + r.gvr.Resource,
			TypeDescription: r.gvr.Resource,
		}))
	}
	return p, nil
}

// listerWatcher is src's ListerWatcher for gvr, whose lists are pruned to
// what the graph reads where src can and the graph knows what that is.
func listerWatcher(src Source, gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error) {
	if ps, ok := src.(prunedSource); ok && gvr == podsGVR {
		return ps.PrunedListerWatcher(gvr, podGraphSkip)
	}
	return src.ListerWatcher(gvr)
}

func (p *populator) start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	now := time.Now()
	for _, s := range p.stores {
		s.started = now
	}
	for _, r := range p.refls {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			r.RunWithContext(ctx)
		}()
	}
}

func (p *populator) stop() {
	p.once.Do(func() {
		if p.cancel != nil {
			p.cancel()
		}
	})
	p.wg.Wait()
}

// synced reports whether every reflector has listed once.
func (p *populator) synced() bool {
	for _, s := range p.stores {
		if !s.synced.Load() {
			return false
		}
	}
	return true
}

// graphStore is a reflector's store that writes into the graph. It keeps
// nothing itself: the graph holds what it needs of each object (its
// edges), and a relist (Replace) drops what it no longer lists by a mark
// on each source vertex.
type graphStore struct {
	g        *Graph
	resource string
	log      *slog.Logger
	synced   atomic.Bool
	// started is when the populator started.
	started time.Time
	// scratch is reused for every pod's edges; the reflector calls the
	// store from one goroutine.
	scratch podEdges
}

var _ toolscache.TransformingStore = (*graphStore)(nil)

// compactPod is what a relist holds of a pod until the graph takes it: its
// key and its edges. client-go's reflector gathers a WatchList's whole
// initial state in a store of its own before Replace; 200,000 decoded pods
// would hold about a gigabyte there while a (re)started server builds its
// graph, each pod's edges a few hundred bytes.
type compactPod struct {
	metav1.ObjectMeta // namespace and name: the reflector's store key
	edges             podEdges
}

// Transformer implements toolscache.TransformingStore: the reflector's
// relist store keeps compact pods. Watch events come as decoded pods; set
// takes both.
func (s *graphStore) Transformer() toolscache.TransformFunc {
	if s.resource != "pods" {
		return nil
	}
	return func(obj interface{}) (interface{}, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		c := &compactPod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
		podEdgesOf(p, &c.edges)
		return c, nil
	}
}

func (s *graphStore) Add(obj interface{}) error    { return s.set(obj) }
func (s *graphStore) Update(obj interface{}) error { return s.set(obj) }
func (s *graphStore) Resync() error                { return nil }

func (s *graphStore) set(obj interface{}) error {
	switch o := obj.(type) {
	case *corev1.Pod:
		podEdgesOf(o, &s.scratch)
		s.g.setPod(&s.scratch)
	case *compactPod:
		s.g.setPod(&o.edges)
	case *corev1.PersistentVolume:
		s.g.setPV(pvEdgesOf(o))
	case *storagev1.VolumeAttachment:
		s.g.setNodeObject(kindVolumeAttachment, o.Name, o.Spec.NodeName)
	case *resourcev1.ResourceSlice:
		node := ""
		if o.Spec.NodeName != nil {
			node = *o.Spec.NodeName
		}
		s.g.setNodeObject(kindResourceSlice, o.Name, node)
	default:
		return fmt.Errorf("node authorizer: unexpected %T in %s", obj, s.resource)
	}
	return nil
}

func (s *graphStore) Delete(obj interface{}) error {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		s.g.deletePod(o.Namespace, o.Name)
	case *compactPod:
		s.g.deletePod(o.Namespace, o.Name)
	case *corev1.PersistentVolume:
		s.g.deletePV(o.Name)
	case *storagev1.VolumeAttachment:
		s.g.deleteNodeObject(kindVolumeAttachment, o.Name)
	case *resourcev1.ResourceSlice:
		s.g.deleteNodeObject(kindResourceSlice, o.Name)
	default:
		return fmt.Errorf("node authorizer: unexpected %T in %s", obj, s.resource)
	}
	return nil
}

// Replace is a (re)list: everything listed is set, and what was in the
// graph but is not listed any more is removed. The graph is locked per
// object, not for the whole list, so requests are answered meanwhile.
func (s *graphStore) Replace(list []interface{}, _ string) error {
	k := s.kind()
	s.g.beginRelist(k)
	var errs []error
	for _, obj := range list {
		if err := s.set(obj); err != nil {
			errs = append(errs, err)
		}
	}
	s.g.endRelist(k)
	if !s.synced.Load() {
		s.synced.Store(true)
		// Once per resource and start: how long a (re)started server's
		// readiness waited on the graph.
		s.log.Info("node authorizer graph listed", "resource", s.resource, "objects", len(list), "after", time.Since(s.started).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

func (s *graphStore) kind() kind {
	switch s.resource {
	case "pods":
		return kindPod
	case "persistentvolumes":
		return kindPV
	case "volumeattachments":
		return kindVolumeAttachment
	}
	return kindResourceSlice
}

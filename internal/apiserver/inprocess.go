package apiserver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/protoprune"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// This file is how parts of the server process that are not request
// handlers — the RBAC and Node authorizers, the ServiceAccount token
// authenticator, admission plugins built outside this package — read the
// API's objects: straight from the watch caches, without HTTP, encoding
// or an authorization check of their own.

// ListerWatcher lists and watches gvr from its watch cache, for client-go
// informers and reflectors running inside the server process. It is
// available after New (the informers it feeds may start before Start:
// the cache answers 429 until it is synced and the reflector retries).
// Objects are the cache's: with a retaining cache they are shared, so an
// informer's transform or handler must not modify them.
func (s *Server) ListerWatcher(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error) {
	h, ok := s.handler(gvr)
	if !ok {
		return nil, fmt.Errorf("apiserver: %s is not served", gvr)
	}
	if h.hooks.serve != nil || h.res.NewList == nil {
		return nil, fmt.Errorf("apiserver: %s has no list to watch", gvr)
	}
	return &cacheListerWatcher{h: h}, nil
}

// PrunedListerWatcher is ListerWatcher for a consumer that reads only part
// of each object: its lists decode the stored objects without managedFields
// and the fields skip names (protoprune.Fields of the kind's protobuf
// message; metadata, field 1, may be pruned but not skipped whole). Watch
// events still carry whole objects, shared with the other watchers. Its
// reflector lists instead of asking for a watch's initial events
// (IsWatchListSemanticsUnSupported), which would be whole objects. A list
// is one *metainternalversion.List of every match, whatever its limit.
//
// The Node authorizer's graph is the case: after a restart it reads every
// pod, and decoding 200,000 whole pods, managedFields and statuses
// included, was most of what it took to be ready.
func (s *Server) PrunedListerWatcher(gvr schema.GroupVersionResource, skip protoprune.Fields) (toolscache.ListerWatcher, error) {
	lw, err := s.ListerWatcher(gvr)
	if err != nil {
		return nil, err
	}
	meta, ok := skip[1]
	if ok && meta == nil {
		return nil, fmt.Errorf("apiserver: a pruned list of %s needs the objects' metadata", gvr)
	}
	full := maps.Clone(skip)
	if full == nil {
		full = protoprune.Fields{}
	}
	full[1] = maps.Clone(meta)
	if full[1] == nil {
		full[1] = protoprune.Fields{}
	}
	full[1][objectMetaManagedFields] = nil
	return &prunedListerWatcher{cacheListerWatcher: lw.(*cacheListerWatcher), skip: protoprune.Compile(full)}, nil
}

// prunedListerWatcher is PrunedListerWatcher's.
type prunedListerWatcher struct {
	*cacheListerWatcher
	skip *protoprune.Plan
}

// IsWatchListSemanticsUnSupported makes client-go's reflector list (the
// pruned decode) rather than watch with initial events (whole objects).
func (lw *prunedListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }

func (lw *prunedListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *prunedListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	h := lw.h
	if !h.storedProtobuf {
		// The cache holds decoded objects or another kind's bytes.
		return lw.cacheListerWatcher.ListWithContext(ctx, opts)
	}
	if err := lw.waitReady(ctx); err != nil {
		return nil, err
	}
	copts, err := cacheListOptions(opts)
	if err != nil {
		return nil, err
	}
	// One answer, not pages (as the watch cache answers a list at
	// resourceVersion 0): client-go's pager gathers pages into one list
	// anyway, and each page is a list call of its own.
	copts.Limit, copts.Continue = 0, ""
	var stored []cache.Stored
	res, err := h.cache.ListStored(ctx, copts, func(st cache.Stored) error {
		stored = append(stored, st)
		return nil
	})
	if err != nil {
		return nil, err
	}
	items, err := lw.decodeAll(ctx, stored)
	if err != nil {
		return nil, err
	}
	// A list of pointers: the typed list (a slice of structs) would copy
	// every object into it, and the reflector copies each out again
	// (meta.ExtractListWithAlloc) — 200,000 pods twice while a restarted
	// server's readiness waits on the Node authorizer's graph.
	return &metainternalversion.List{ListMeta: metav1.ListMeta{ResourceVersion: res.ResourceVersion}, Items: items}, nil
}

// decodeAll decodes stored on every core. After a restart the Node
// authorizer's list of 200,000 pods is what the server waits on last, and
// one goroutine decoding them got a small share of the CPU beside the
// requests of 10,000 nodes: 7.9 s from the pods cache filled to ready.
func (lw *prunedListerWatcher) decodeAll(ctx context.Context, stored []cache.Stored) ([]runtime.Object, error) {
	const chunk = 256
	items := make([]runtime.Object, len(stored))
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range min(goruntime.GOMAXPROCS(0), len(stored)/chunk+1) {
		g.Go(func() error {
			var scratch []byte
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(stored) {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				for i := lo; i < min(lo+chunk, len(stored)); i++ {
					st := stored[i]
					v, err := st.Value(&scratch)
					if err != nil {
						return err
					}
					kv := storage.KeyValue{Key: st.Key, Value: v, ModRevision: st.ModRevision, CreateRevision: st.CreateRevision}
					if items[i], err = lw.h.objects.decodePruned(kv, lw.skip); err != nil {
						return err
					}
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return items, nil
}

// GetObject reads one object from gvr's watch cache, as a GET with
// resourceVersion rv would ("" consistent, "0" whatever the cache has).
// It returns the resource's 404 when there is none. The object may be
// shared with the cache: do not modify it.
func (s *Server) GetObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, rv string) (runtime.Object, error) {
	h, ok := s.handler(gvr)
	if !ok {
		return nil, fmt.Errorf("apiserver: %s is not served", gvr)
	}
	obj, err := h.cache.Get(ctx, h.objects.key(namespace, name), rv)
	if err != nil {
		return nil, h.cacheError(err, name)
	}
	return obj, nil
}

// AddReadinessCheck makes Ready (and so /readyz, and myriad up's wait)
// report not ready until ready returns true — for state the server must
// have before it may answer requests, such as an authorizer's index. Call
// it before the server serves.
func (s *Server) AddReadinessCheck(name string, ready func() bool) {
	s.readiness.mu.Lock()
	defer s.readiness.mu.Unlock()
	s.readiness.checks = append(s.readiness.checks, readinessCheck{name: name, ready: ready})
}

type readinessCheck struct {
	name  string
	ready func() bool
}

// readinessChecks are the checks AddReadinessCheck registered.
type readinessChecks struct {
	mu     sync.Mutex
	checks []readinessCheck
}

// notReady names the registered checks that do not pass yet, sorted.
func (r *readinessChecks) notReady() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.checks {
		if !c.ready() {
			out = append(out, c.name)
		}
	}
	sort.Strings(out)
	return out
}

type cacheListerWatcher struct {
	h *resourceHandler
	// queueLimit is how many events a watch holds for its consumer before
	// it is ended; 0 means inProcessWatchBuffer.
	queueLimit int
}

var _ toolscache.ListerWatcherWithContext = (*cacheListerWatcher)(nil)

func (lw *cacheListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

func (lw *cacheListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}

func (lw *cacheListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := lw.waitReady(ctx); err != nil {
		return nil, err
	}
	copts, err := cacheListOptions(opts)
	if err != nil {
		return nil, err
	}
	var items []runtime.Object
	res, err := lw.h.cache.List(ctx, copts, func(obj runtime.Object) error {
		items = append(items, obj)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return lw.h.typedList(items, metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount})
}

// waitReady waits, as long as ctx lets it, for the cache to be filled. A
// request gives up after the cache's ReadWaitTimeout with a 429 its client
// retries; an in-process reflector would retry only after its backoff, which
// after a restart at 200,000 pods let the Node authorizer's graph (and so
// readiness) start listing 16 s after the pods cache was ready.
func (lw *cacheListerWatcher) waitReady(ctx context.Context) error {
	return lw.h.cache.WaitReady(ctx)
}

func (lw *cacheListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if err := lw.waitReady(ctx); err != nil {
		return nil, err
	}
	label, field, err := selectors(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w, err := lw.h.cache.Watch(ctx, cache.WatchOptions{
		ResourceVersion:   opts.ResourceVersion,
		Label:             label,
		Field:             field,
		AllowBookmarks:    opts.AllowWatchBookmarks,
		SendInitialEvents: opts.SendInitialEvents,
		Buffer:            inProcessCacheBuffer,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	cw := &cacheWatch{w: w, cancel: cancel, out: make(chan watch.Event), limit: cmp.Or(lw.queueLimit, inProcessWatchBuffer)}
	go cw.run(ctx)
	return cw, nil
}

// An in-process watch's events wait for its consumer in a queue that grows
// as they come (cacheWatch.run), up to inProcessWatchBuffer: a consumer
// that falls this far behind is ended and watches again from the last
// event it took, or relists everything (for the Node authorizer, every
// pod) once the cache's window has passed it, so a burst of pod writes
// during a GC pause must fit. The cache's channel in front of the queue
// needs only to cover the moments the queue's goroutine is not running.
// A channel at the bound was 512 KiB for each of the API server's ~26
// in-process watches, mostly of resources that rarely change.
const (
	inProcessWatchBuffer = 1 << 16
	inProcessCacheBuffer = 1 << 12
)

// cacheListOptions is opts as the cache takes them.
func cacheListOptions(opts metav1.ListOptions) (cache.ListOptions, error) {
	label, field, err := selectors(opts)
	if err != nil {
		return cache.ListOptions{}, err
	}
	return cache.ListOptions{
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: opts.ResourceVersionMatch,
		Label:                label,
		Field:                field,
		Limit:                opts.Limit,
		Continue:             opts.Continue,
	}, nil
}

func selectors(opts metav1.ListOptions) (labels.Selector, fields.Selector, error) {
	label, field := labels.Everything(), fields.Everything()
	var err error
	if opts.LabelSelector != "" {
		if label, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	}
	if opts.FieldSelector != "" {
		if field, err = fields.ParseSelector(opts.FieldSelector); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	}
	return label, field, nil
}

// cacheWatch adapts a cache.Watcher to watch.Interface.
type cacheWatch struct {
	w      *cache.Watcher
	cancel context.CancelFunc
	out    chan watch.Event
	limit  int // the queue's bound (inProcessWatchBuffer)
	once   sync.Once
}

// run queues the cache's events and hands them on, decoded, as the
// consumer takes them.
func (cw *cacheWatch) run(ctx context.Context) {
	defer close(cw.out)
	defer cw.w.Stop()
	in := cw.w.ResultChan()
	var q eventQueue
	var next watch.Event // q's head decoded, when q is not empty
	for {
		var out chan watch.Event
		if q.len() > 0 {
			out = cw.out
			if next.Type == "" {
				next = decodeEvent(q.headEvent())
			}
		} else if in == nil {
			return
		}
		select {
		case ev, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			if q.len() == cw.limit {
				// Fallen behind: ended, as the cache ends a watcher whose
				// buffer is full; the consumer watches again from the
				// last event it took.
				return
			}
			q.push(ev)
		case out <- next:
			q.pop()
			if next.Type == watch.Error {
				return
			}
			next = watch.Event{}
		case <-ctx.Done():
			return
		}
	}
}

// decodeEvent is ev as a watch.Event; a stored value that does not decode
// in full ends the watch with the error, as the wire does
// (cache.Event.Object).
func decodeEvent(ev *cache.Event) watch.Event {
	obj, err := ev.Object()
	if err != nil {
		st := apierrors.NewInternalError(err).Status()
		return watch.Event{Type: watch.Error, Object: &st}
	}
	return watch.Event{Type: ev.Type, Object: obj}
}

// eventQueue is a FIFO of cache events whose array is reused once drained,
// and let go when a burst made it large.
type eventQueue struct {
	evs  []*cache.Event
	head int
}

func (q *eventQueue) len() int                { return len(q.evs) - q.head }
func (q *eventQueue) push(ev *cache.Event)    { q.evs = append(q.evs, ev) }
func (q *eventQueue) headEvent() *cache.Event { return q.evs[q.head] }

func (q *eventQueue) pop() {
	q.evs[q.head] = nil
	q.head++
	if q.head == len(q.evs) {
		q.head = 0
		q.evs = q.evs[:0]
		if cap(q.evs) > inProcessCacheBuffer {
			q.evs = nil
		}
	}
}

func (cw *cacheWatch) Stop() { cw.once.Do(cw.cancel) }

func (cw *cacheWatch) ResultChan() <-chan watch.Event { return cw.out }

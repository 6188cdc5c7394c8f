package cache

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
)

// registry is the set of live watchers, bucketed by the one index value
// each is restricted to (an object name, an indexed field or label value,
// or a namespace), so an event is offered only to the watchers of
// its object's (and previous object's) values plus the unindexed ones. With
// 10,000 node watchers a pod event costs a handful of checks, not 10,000.
type registry struct {
	watchers prometheus.Gauge // set by New
	mu       struct {
		sync.Mutex
		byKey     map[indexKey]map[*Watcher]struct{}
		unindexed map[*Watcher]struct{}
		all       map[*Watcher]struct{}
		closed    bool
	}
}

func (r *registry) init() {
	r.mu.byKey = make(map[indexKey]map[*Watcher]struct{})
	r.mu.unindexed = make(map[*Watcher]struct{})
	r.mu.all = make(map[*Watcher]struct{})
}

// add registers w; false once the registry is closed (cache stopped).
func (r *registry) add(w *Watcher) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return false
	}
	r.mu.all[w] = struct{}{}
	if !w.indexed {
		r.mu.unindexed[w] = struct{}{}
		r.watchers.Set(float64(len(r.mu.all)))
		return true
	}
	b := r.mu.byKey[w.key]
	if b == nil {
		b = make(map[*Watcher]struct{})
		r.mu.byKey[w.key] = b
	}
	b[w] = struct{}{}
	r.watchers.Set(float64(len(r.mu.all)))
	return true
}

func (r *registry) remove(w *Watcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(w)
}

func (r *registry) removeLocked(w *Watcher) {
	delete(r.mu.all, w)
	r.watchers.Set(float64(len(r.mu.all)))
	if !w.indexed {
		delete(r.mu.unindexed, w)
		return
	}
	if b := r.mu.byKey[w.key]; b != nil {
		delete(b, w)
		if len(b) == 0 {
			delete(r.mu.byKey, w.key)
		}
	}
}

func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.all)
}

// endAll ends every watcher, with a final error event when err is set.
// A nil err means the cache is stopping: the registry closes for good.
func (r *registry) endAll(err error) {
	var ev *Event
	if err != nil {
		ev = errorEvent(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := range r.mu.all {
		w.end(ev)
	}
	r.mu.byKey = make(map[indexKey]map[*Watcher]struct{})
	r.mu.unindexed = make(map[*Watcher]struct{})
	r.mu.all = make(map[*Watcher]struct{})
	r.watchers.Set(0)
	if err == nil {
		r.mu.closed = true
	}
}

func errorEvent(err error) *Event {
	var status apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	} else {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	return &Event{Type: watch.Error, obj: &st}
}

// dispatchKeys appends the registry buckets an entry concerns.
func (c *Cache) dispatchKeys(dst []indexKey, e *entry) []indexKey {
	n := len(dst)
	dst = append(dst, indexKey{"ns", e.ns()}, indexKey{"name", e.name()})
	dst = appendIndexKeys(dst, c.cfg.IndexedFields, c.cfg.IndexedLabels, e)
	// Deduplicate against what was there (cur and prev often agree).
	out := dst[:n]
	for _, k := range dst[n:] {
		dup := false
		for _, o := range out {
			if o == k {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, k)
		}
	}
	return out
}

// dispatch offers events, in order, to the watchers they may concern. It
// runs on the reflector goroutine and never blocks: a watcher whose buffer
// is full is ended.
func (c *Cache) dispatch(evs []*winEvent) {
	if len(evs) == 0 {
		return
	}
	var buf [16]indexKey
	var dead []*Watcher
	delivered := 0
	c.reg.mu.Lock()
	for _, ev := range evs {
		keys := buf[:0]
		if ev.cur != nil {
			keys = c.dispatchKeys(keys, ev.cur)
		}
		if ev.prev != nil {
			keys = c.dispatchKeys(keys, ev.prev)
		}
		for _, k := range keys {
			for w := range c.reg.mu.byKey[k] {
				ok, sent := w.offer(ev)
				if !ok {
					dead = append(dead, w)
				}
				if sent {
					delivered++
				}
			}
		}
		for w := range c.reg.mu.unindexed {
			ok, sent := w.offer(ev)
			if !ok {
				dead = append(dead, w)
			}
			if sent {
				delivered++
			}
		}
	}
	for _, w := range dead {
		c.reg.removeLocked(w)
	}
	c.reg.mu.Unlock()
	c.metrics.dispatched.Add(float64(delivered))
	if len(dead) > 0 {
		c.metrics.terminated.Add(float64(len(dead)))
		c.cfg.Logger.Info("ended watchers that could not keep up or met an undecodable object", "count", len(dead), "watching", describeWatchers(dead))
	}
}

// sendBookmarks gives every bookmark-enabled watcher that has not seen
// the current revision a bookmark carrying it, so that a client whose
// objects are quiet still advances its resourceVersion and never falls
// out of the window (Alibaba's watch bookmark). All of them share one
// *Event, encoded once per format.
func (c *Cache) sendBookmarks() {
	rev := c.Revision()
	bm := c.bookmarkEvent(rev, false)
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	for w := range c.reg.mu.all {
		if w.allowBookmarks {
			w.offerBookmark(bm)
		}
	}
}

// deadlineBookmarkLead is how long before its deadline a watcher gets its
// last bookmark: upstream's cacher's two seconds.
const deadlineBookmarkLead = 2 * time.Second

// sendDeadlineBookmarks gives each bookmark-enabled watcher whose
// deadline (WatchOptions.Deadline) is near a bookmark at the current
// revision, once. Called on the reflector's goroutine after apply has
// dispatched everything up to that revision.
func (c *Cache) sendDeadlineBookmarks(now time.Time) {
	var bm *Event
	lazy := func() *Event {
		if bm == nil {
			bm = c.bookmarkEvent(c.Revision(), false)
		}
		return bm
	}
	c.reg.mu.Lock()
	defer c.reg.mu.Unlock()
	for w := range c.reg.mu.all {
		w.offerDeadlineBookmark(now, deadlineBookmarkLead, lazy)
	}
}

// BookmarkAll sends every bookmark-enabled watcher a bookmark at the
// store's current revision and waits, until ctx ends, for the watchers to take
// what they have queued. A server going down calls it before it ends the
// watches: each client then resumes after the restart from the revision
// it had reached, not from its last event or minutely bookmark, which for
// a quiet selector (one node's pods, under a thousand Lease writes a
// second) can be older than the restarted cache's window and would cost
// a relist per client.
func (c *Cache) BookmarkAll(ctx context.Context) {
	// The cache's revision moves with its own resource's changes and with
	// progress notifications; under other resources' writes it can be a
	// minute behind the store, older than a restarted cache's window.
	// Catch up first (best effort: a bookmark at the revision the cache
	// has is still better than none).
	if _, err := c.waitConsistent(ctx); err != nil {
		c.cfg.Logger.Debug("shutdown bookmark at the cache's revision, not the store's", "err", err)
	}
	c.sendBookmarks()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for c.reg.queuedToBookmarkable() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// queuedToBookmarkable is how many events bookmark-enabled watchers have
// not taken yet.
func (r *registry) queuedToBookmarkable() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for w := range r.mu.all {
		if w.allowBookmarks {
			n += len(w.out)
		}
	}
	return n
}

// initialEventsEndAnnotation marks the bookmark that ends the initial
// events of a sendInitialEvents watch (metav1.InitialEventsAnnotationKey).
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

func (c *Cache) bookmarkEvent(rev int64, initialEnd bool) *Event {
	obj := c.cfg.NewFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(formatRV(rev))
		if initialEnd {
			m.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
		}
	}
	return &Event{Type: watch.Bookmark, obj: obj, Revision: rev}
}

// describeWatchers says what the first few of ws watched ("all", or the
// index bucket: "ns=default", "spec.nodeName=n1"), so a log line tells
// which clients fall behind.
func describeWatchers(ws []*Watcher) string {
	const most = 5
	var b strings.Builder
	for i, w := range ws {
		if i == most {
			fmt.Fprintf(&b, " and %d more", len(ws)-most)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if !w.indexed {
			b.WriteString("all")
			continue
		}
		b.WriteString(w.key.index + "=" + w.key.value)
	}
	return b.String()
}

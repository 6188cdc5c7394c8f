package cache

import (
	"sort"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// winEvent is one change in the window: the object after (cur, nil for a
// delete) and before (prev, nil for a create). The watch events built from
// it are made lazily and at most once each, so every watcher that gets the
// change gets the same *Event (and the same encodings).
type winEvent struct {
	key  string
	cur  *entry
	prev *entry
	rev  int64
	at   time.Time

	added, modified, deleted atomic.Pointer[Event]
}

// addedEvent: cur, seen as new by this watcher (a create, or an update
// that made the object start matching its selector).
func (w *winEvent) addedEvent(c *Cache) (*Event, error) {
	return w.lazy(&w.added, func() (*Event, error) {
		return c.changeEvent(watch.Added, w.cur, w.rev)
	})
}

func (w *winEvent) modifiedEvent(c *Cache) (*Event, error) {
	return w.lazy(&w.modified, func() (*Event, error) {
		return c.changeEvent(watch.Modified, w.cur, w.rev)
	})
}

// deletedEvent: the previous object with the event's revision, for a delete
// and for an update that made the object stop matching (as upstream: the
// client must be able to record the revision it has seen).
func (w *winEvent) deletedEvent(c *Cache) (*Event, error) {
	return w.lazy(&w.deleted, func() (*Event, error) {
		if undecodableErr(w.prev) != nil {
			// Deleting an undecodable object is how it is repaired: say
			// so with what the key tells (corrupt.go).
			return &Event{Type: watch.Deleted, obj: c.stub(w.prev, w.rev), Revision: w.rev}, nil
		}
		return c.changeEvent(watch.Deleted, w.prev, w.rev)
	})
}

// changeEvent is the event of type typ at revision rev showing e (for a
// delete, the last version, at the delete's revision). The object is
// decoded only when a consumer asks for it (Event.Object): one that passes
// Stored through never does. e must be decodable.
func (c *Cache) changeEvent(typ watch.EventType, e *entry, rev int64) (*Event, error) {
	if err := undecodableErr(e); err != nil {
		return nil, err
	}
	if e.obj != nil {
		// Retained: shared with readers, so a different revision goes on
		// a copy.
		obj := e.obj
		if rev != e.rev {
			obj = withRevision(obj.DeepCopyObject(), rev)
		}
		return &Event{Type: typ, obj: obj, Revision: rev}, nil
	}
	st := c.stored(e)
	return &Event{Type: typ, Stored: &st, Revision: rev, decode: func() (runtime.Object, error) {
		obj, err := c.object(e)
		if err != nil {
			return nil, err
		}
		if rev != e.rev {
			obj = withRevision(obj, rev) // decoded for this event alone
		}
		return obj, nil
	}}, nil
}

// withRevision sets obj's metadata.resourceVersion to rev and returns it.
func withRevision(obj runtime.Object, rev int64) runtime.Object {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetResourceVersion(formatRV(rev))
	}
	return obj
}

func (w *winEvent) lazy(p *atomic.Pointer[Event], build func() (*Event, error)) (*Event, error) {
	if e := p.Load(); e != nil {
		return e, nil
	}
	e, err := build()
	if err != nil {
		return nil, err
	}
	if p.CompareAndSwap(nil, e) {
		return e, nil
	}
	return p.Load(), nil
}

// forgetEvents lets go of the events built for delivery (their objects
// and encodings); a later replay to a reconnecting watcher builds new ones.
func (w *winEvent) forgetEvents() {
	w.added.Store(nil)
	w.modified.Store(nil)
	w.deleted.Store(nil)
}

// memoTTL is how long a window event keeps the events built for its
// delivery (decoded objects and their encodings): long enough for the
// fan-out to every live watcher, short enough that the window holds stored
// bytes, not decoded and serialized copies of them.
const memoTTL = 10 * time.Second

// window is a ring of the most recent events, oldest first. It is guarded
// by Cache.mu.
//
// Sizing: when full, the ring doubles (up to max) if its oldest event is
// younger than the reconnect interval, and otherwise drops the oldest; the
// periodic trim drops events older than the interval (keeping min) and
// halves the ring when it is mostly empty. So the window covers
// ReconnectInterval of churn whatever the rate, within [min, max] events —
// the adaptive sizing Ant Group describes, without a tuning knob per type.
type window struct {
	buf        []*winEvent
	head, n    int
	min, max   int
	keepFor    time.Duration
	memoCursor int64 // events with rev <= memoCursor have forgotten their delivery events

	// startRev is the revision the window is complete from: every event
	// with revision > startRev is in the window (or newer than the cache).
	startRev int64
}

func newWindow(minEvents, maxEvents int, keepFor time.Duration, startRev int64) *window {
	return &window{buf: make([]*winEvent, minEvents), min: minEvents, max: maxEvents, keepFor: keepFor, startRev: startRev}
}

func (w *window) at(i int) *winEvent { return w.buf[(w.head+i)%len(w.buf)] }

func (w *window) len() int { return w.n }

func (w *window) add(ev *winEvent, now time.Time) {
	if w.n == len(w.buf) {
		oldest := w.at(0)
		if now.Sub(oldest.at) < w.keepFor && len(w.buf) < w.max {
			w.resize(min(2*len(w.buf), w.max))
		} else {
			w.dropOldest()
		}
	}
	w.buf[(w.head+w.n)%len(w.buf)] = ev
	w.n++
}

func (w *window) dropOldest() {
	ev := w.buf[w.head]
	w.buf[w.head] = nil
	w.head = (w.head + 1) % len(w.buf)
	w.n--
	w.startRev = ev.rev
}

func (w *window) resize(size int) {
	nb := make([]*winEvent, size)
	for i := 0; i < w.n; i++ {
		nb[i] = w.at(i)
	}
	w.buf, w.head = nb, 0
}

// trim drops events older than keepFor beyond the minimum, shrinks an
// oversized ring, and forgets the delivery events of events older than
// memoTTL.
func (w *window) trim(now time.Time) {
	for w.n > w.min && now.Sub(w.at(0).at) > w.keepFor {
		w.dropOldest()
	}
	if len(w.buf) > w.min && w.n < len(w.buf)/4 {
		w.resize(max(w.min, len(w.buf)/2))
	}
	// Walk forward from the last event whose memos were dropped.
	i := sort.Search(w.n, func(i int) bool { return w.at(i).rev > w.memoCursor })
	for ; i < w.n; i++ {
		ev := w.at(i)
		if now.Sub(ev.at) < memoTTL {
			break
		}
		ev.forgetEvents()
		w.memoCursor = ev.rev
	}
}

// since returns the events with revision > rev for which keep (if not
// nil) is true, oldest first. The caller has checked rev >= w.startRev.
// Filtering here, under the lock, is what keeps 10,000 node watchers
// reconnecting from a minute ago from each copying 60,000 events to find
// their few.
func (w *window) since(rev int64, keep func(*winEvent) bool) []*winEvent {
	i := sort.Search(w.n, func(i int) bool { return w.at(i).rev > rev })
	var out []*winEvent
	if keep == nil {
		out = make([]*winEvent, 0, w.n-i)
	}
	for ; i < w.n; i++ {
		if ev := w.at(i); keep == nil || keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// override is the version of one key as of an older revision: e is nil
// when the key did not exist then.
type override struct {
	key string
	e   *entry
}

// undo returns, sorted by key, the version as of rev of every key changed
// after rev: the previous object of the oldest later event on that key.
// Together with the current state this is the state as of rev, at a cost
// of O(events after rev) instead of a snapshot per revision.
func (w *window) undo(rev int64) []override {
	if w.n == 0 || w.at(w.n-1).rev <= rev {
		return nil
	}
	asOf := make(map[string]*entry)
	for i := w.n - 1; i >= 0; i-- {
		ev := w.at(i)
		if ev.rev <= rev {
			break
		}
		asOf[ev.key] = ev.prev // older events overwrite newer ones
	}
	out := make([]override, 0, len(asOf))
	for k, e := range asOf {
		out = append(out, override{key: k, e: e})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

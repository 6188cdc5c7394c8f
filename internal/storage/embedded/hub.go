package embedded

import (
	"strings"
	"sync"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// hub fans committed events out to live watchers and keeps a ring of the
// most recent events so that a watch starting from a recent revision is
// served from memory.
//
// The ring holds a contiguous run of revisions (floor, rev]: every write gets
// exactly one revision and one event, so the event for revision r sits at a
// fixed offset from the oldest one and no search is needed.
//
// Registration and publication happen under mu; that is the whole handoff
// argument: a watcher registered at revision R is given the ring's events
// after its cursor up to R by register, and every event after R by publish —
// nothing in between, nothing twice.
type hub struct {
	maxEvents, maxBytes int

	mu struct {
		sync.Mutex
		rev      int64 // revision of the newest published event
		floor    int64 // the ring holds every event in (floor, rev]
		ring     []storage.Event
		head, n  int // ring[head] is the oldest of n events
		bytes    int // value and previous-value bytes held by the ring
		watchers map[*watcher]struct{}
		closed   bool
	}
}

func newHub(rev int64, maxEvents, maxBytes int) *hub {
	h := &hub{maxEvents: maxEvents, maxBytes: maxBytes}
	h.mu.rev = rev
	h.mu.floor = rev
	h.mu.ring = make([]storage.Event, maxEvents)
	h.mu.watchers = make(map[*watcher]struct{})
	return h
}

// publish appends events (consecutive revisions, already durable) to the ring
// and hands each to every matching live watcher without blocking: a watcher
// whose buffer is full is ended (see overflowLocked), never waited for.
func (h *hub) publish(events []storage.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		h.pushLocked(ev)
		for w := range h.mu.watchers {
			if strings.HasPrefix(ev.Key, w.prefix) {
				h.sendLocked(w, ev)
			}
		}
	}
}

func (h *hub) pushLocked(ev storage.Event) {
	size := len(ev.Value) + len(ev.PrevValue)
	for h.mu.n > 0 && (h.mu.n == h.maxEvents || h.mu.bytes+size > h.maxBytes) {
		old := &h.mu.ring[h.mu.head]
		h.mu.floor = old.Revision
		h.mu.bytes -= len(old.Value) + len(old.PrevValue)
		*old = storage.Event{} // let the value be collected
		h.mu.head = (h.mu.head + 1) % h.maxEvents
		h.mu.n--
	}
	h.mu.ring[(h.mu.head+h.mu.n)%h.maxEvents] = ev
	h.mu.n++
	h.mu.bytes += size
	h.mu.rev = ev.Revision
}

// sendLocked queues ev for w, or ends w if its consumer is more than
// Options.WatchBuffer events behind: queued, in w's goroutine's hand, or
// in the out channel's buffer.
func (h *hub) sendLocked(w *watcher, ev storage.Event) {
	if len(w.queue)+int(w.inHand.Load())+len(w.out) >= w.s.opts.WatchBuffer {
		h.endLocked(w, ErrWatcherTooSlow)
		return
	}
	if w.queue == nil {
		w.queue, w.spare = w.spare, nil
	}
	w.queue = append(w.queue, ev)
	w.signal()
}

// endLocked unregisters w; w's goroutine delivers what is queued and then
// ends with err.
func (h *hub) endLocked(w *watcher, err error) {
	if _, ok := h.mu.watchers[w]; !ok {
		return
	}
	delete(h.mu.watchers, w)
	w.hubEnd = err
	w.hubDone = true
	w.signal()
}

// take hands w's goroutine the events queued for it, in order, giving back
// done, its delivered previous batch, for reuse; ended reports that no more
// will come, and err why.
func (h *hub) take(w *watcher, done []storage.Event) (batch []storage.Event, ended bool, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	batch = w.queue
	w.inHand.Store(int64(len(batch)))
	w.queue = nil
	if cap(done) <= maxSpareEvents {
		w.spare = done[:0]
	}
	return batch, w.hubDone, w.hubEnd
}

// maxSpareEvents bounds the batch a watcher keeps for reuse, so a burst's
// buffer is not held for the watcher's life.
const maxSpareEvents = 256

// register makes w live if the ring covers every revision after cursor,
// returning the ring's matching events after cursor (followed by a progress
// event if one was requested while w was catching up from disk). ok is false
// when w must first read more history from disk. closed reports a closed hub.
func (h *hub) register(w *watcher, cursor int64) (catchup []storage.Event, ok, closed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.mu.closed {
		return nil, false, true
	}
	if cursor < h.mu.floor {
		return nil, false, false
	}
	if cursor < h.mu.rev {
		first := h.mu.head + int(cursor-h.mu.floor)
		for i := 0; i < int(h.mu.rev-cursor); i++ {
			ev := h.mu.ring[(first+i)%h.maxEvents]
			if strings.HasPrefix(ev.Key, w.prefix) {
				catchup = append(catchup, ev)
			}
		}
	}
	if w.progressWanted {
		w.progressWanted = false
		catchup = append(catchup, storage.Event{Type: storage.EventProgress, Revision: h.mu.rev})
	}
	h.mu.watchers[w] = struct{}{}
	w.registered = true
	return catchup, true, false
}

// requestProgress queues a progress event behind everything already handed
// to w, or remembers the request until w registers.
func (h *hub) requestProgress(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, live := h.mu.watchers[w]; live {
		h.sendLocked(w, storage.Event{Type: storage.EventProgress, Revision: h.mu.rev})
	} else if !w.registered {
		w.progressWanted = true
	}
}

// remove unregisters w (its goroutine is ending for its own reasons).
func (h *hub) remove(w *watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.mu.watchers, w)
}

// closeAll ends every live watcher with ErrClosed and refuses new ones.
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.closed = true
	for w := range h.mu.watchers {
		h.endLocked(w, storage.ErrClosed)
	}
}

func (h *hub) currentRevision() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mu.rev
}

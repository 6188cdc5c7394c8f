package cache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions mirror the watch-relevant metav1.ListOptions.
type WatchOptions struct {
	// ResourceVersion: "" or "0" without SendInitialEvents: ADDED events
	// for the current state ("" waits for a consistent one), then changes.
	// "N": every change after N (410 Expired if N has left the window).
	ResourceVersion string
	Namespace       string
	Label           labels.Selector
	Field           fields.Selector
	// AllowBookmarks enables periodic bookmarks and the initial-events-end
	// bookmark.
	AllowBookmarks bool
	// Deadline is when the caller will end the watch (its timeout), if it
	// will. With AllowBookmarks the watcher then gets a bookmark at the
	// cache's revision shortly before (deadlineBookmarkLead), as upstream's
	// cacher sends one: the client's next watch starts there instead of
	// at its last event, which for one node's pods can be a minute of
	// everyone's changes to replay and filter (at 10,000 nodes, a fifth of
	// the server's CPU).
	Deadline time.Time
	// SendInitialEvents true: ADDED for the state at ResourceVersion (""
	// consistent, "0" any, "N" not older than N), then (if AllowBookmarks)
	// a bookmark annotated k8s.io/initial-events-end, then changes. False:
	// changes only, after ResourceVersion ("" = the store's current
	// revision, "0" = the cache's). The API server validates the upstream
	// rule that it requires resourceVersionMatch=NotOlderThan.
	SendInitialEvents *bool
	// Buffer, when positive, is the watcher's channel capacity instead of
	// Config.WatcherBuffer (times ten for a whole-resource watcher): for
	// in-process consumers (the Node authorizer's graph, RBAC's index) that
	// must not be ended for a burst they would then answer with a relist
	// of everything.
	Buffer int
}

// Watcher is one watch on the cache. Events arrive on ResultChan in
// revision order; the channel is closed when the watch ends: Stop, the
// context given to Watch ending, the cache stopping, or the watcher falling
// behind (its buffer was full; the client re-watches from the last revision
// it saw). When the cache lost its position (it re-listed the store), a
// final watch.Error event carrying a 410 Expired status comes first; when a
// change it would see is an undecodable object (corrupt.go), a 500.
type Watcher struct {
	c              *Cache
	out            chan *Event
	pred           predicate
	key            indexKey
	indexed        bool
	allowBookmarks bool
	// deadline is WatchOptions.Deadline.
	deadline time.Time
	// startRev: changes with a revision <= startRev are covered by the
	// watcher's initial events; dispatch skips them.
	startRev int64
	done     chan struct{}

	mu struct {
		sync.Mutex
		// live: initial events are out; dispatch sends to out directly.
		// Until then it queues to pending, and the initial goroutine owns
		// out (and closes it if the watcher ends before going live).
		live    bool
		ended   bool
		pending []*Event
		endEv   *Event
		lastRev int64
		// deadlineBookmarked: the bookmark before the deadline is out.
		deadlineBookmarked bool
		// releaseCtx unregisters the context.AfterFunc that stops the
		// watcher with its context.
		releaseCtx func() bool
	}
}

// ResultChan returns the watcher's events.
func (w *Watcher) ResultChan() <-chan *Event { return w.out }

// Stop ends the watch and closes ResultChan (possibly after events already
// buffered). Idempotent.
func (w *Watcher) Stop() {
	w.mu.Lock()
	w.endLocked(nil)
	release := w.mu.releaseCtx
	w.mu.Unlock()
	w.c.reg.remove(w)
	if release != nil {
		release()
	}
}

// end is Stop without touching the registry (the caller holds it).
func (w *Watcher) end(ev *Event) {
	w.mu.Lock()
	w.endLocked(ev)
	w.mu.Unlock()
}

func (w *Watcher) endLocked(ev *Event) {
	if w.mu.ended {
		return
	}
	w.mu.ended = true
	close(w.done)
	if !w.mu.live {
		w.mu.endEv = ev // the initial goroutine sends it and closes out
		return
	}
	if ev != nil {
		select {
		case w.out <- ev:
		default: // no room: closing alone still makes the client re-watch
		}
	}
	close(w.out)
}

// eventFor is what change ev looks like through the watcher's selector:
// an object that starts matching is ADDED, one that stops is DELETED. nil
// when the change does not concern the watcher.
func (w *Watcher) eventFor(ev *winEvent) *Event {
	curOK := ev.cur != nil && w.pred.matches(ev.cur)
	prevOK := ev.prev != nil && w.pred.matches(ev.prev)
	var e *Event
	var err error
	switch {
	case curOK && prevOK:
		e, err = ev.modifiedEvent(w.c)
	case curOK:
		e, err = ev.addedEvent(w.c)
	case prevOK:
		e, err = ev.deletedEvent(w.c)
	}
	if err == nil && ev.cur != nil && !curOK && prevOK && undecodableErr(ev.cur) != nil {
		// Not a change out of the selector: the new version's labels and
		// fields are unknown.
		err = undecodableErr(ev.cur)
	}
	if err != nil {
		// An undecodable object (corrupt.go): end the watch with a 500
		// naming it rather than skip the change, a silent gap.
		w.c.cfg.Logger.Error("cannot build watch event", "key", ev.key, "rev", ev.rev, "err", err)
		return errorEvent(err)
	}
	return e
}

// maxPending bounds the changes queued for a watcher still sending its
// initial events. It is far above the channel size because the initial
// events of a large state take seconds to write to a client while the
// resource keeps changing; pending holds only pointers to shared events.
const maxPending = 100_000

// offer hands ev to the watcher if it concerns it. ok is false when the
// watcher has ended (and should leave the registry); sent reports a
// delivery. Called with the registry locked.
func (w *Watcher) offer(ev *winEvent) (ok, sent bool) {
	if ev.rev <= w.startRev {
		return true, false
	}
	e := w.eventFor(ev)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.ended {
		return false, false
	}
	if e == nil {
		return true, false
	}
	if e.Type == watch.Error {
		w.endLocked(e)
		return false, false
	}
	if !w.mu.live {
		if len(w.mu.pending) >= maxPending {
			w.endLocked(nil)
			return false, false
		}
		w.mu.pending = append(w.mu.pending, e)
		w.mu.lastRev = e.Revision
		return true, true
	}
	select {
	case w.out <- e:
		w.mu.lastRev = e.Revision
		return true, true
	default:
		// Blocking here would stall every other watcher; the client
		// re-watches from the last revision it received.
		w.endLocked(nil)
		return false, false
	}
}

// offerBookmark sends bm if the watcher is live and has not seen its
// revision; a full buffer just skips it (bookmarks are advisory).
func (w *Watcher) offerBookmark(bm *Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.offerBookmarkLocked(bm)
}

// offerBookmarkLocked is offerBookmark under w.mu; it reports whether the
// watcher has seen bm's revision now.
func (w *Watcher) offerBookmarkLocked(bm *Event) bool {
	if w.mu.ended || !w.mu.live {
		return false
	}
	if w.mu.lastRev >= bm.Revision {
		return true
	}
	select {
	case w.out <- bm:
		w.mu.lastRev = bm.Revision
		return true
	default:
		return false
	}
}

// offerDeadlineBookmark offers bm once the watcher's deadline is at most
// lead after now, until it is out.
func (w *Watcher) offerDeadlineBookmark(now time.Time, lead time.Duration, bm func() *Event) {
	if !w.allowBookmarks || w.deadline.IsZero() || w.deadline.Sub(now) > lead {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.mu.deadlineBookmarked {
		w.mu.deadlineBookmarked = w.offerBookmarkLocked(bm())
	}
}

// Watch starts a watch. Errors: 410 Expired when ResourceVersion is older
// than the window, 504 when the cache does not reach the revision needed in
// time, 429 before the cache is initialized, 400 for a bad
// ResourceVersion. The watch ends when ctx does (or on Stop).
func (c *Cache) Watch(ctx context.Context, opts WatchOptions) (*Watcher, error) {
	if err := c.waitReadyBounded(ctx); err != nil {
		return nil, err
	}
	pred := newPredicate(opts.Namespace, opts.Label, opts.Field)
	initial := false // send the state as ADDED events
	endBookmark := false
	var from int64 // otherwise: replay changes after from
	switch {
	case opts.SendInitialEvents != nil && *opts.SendInitialEvents:
		initial, endBookmark = true, opts.AllowBookmarks
		if err := c.waitForOpts(ctx, opts.ResourceVersion); err != nil {
			return nil, err
		}
	case opts.SendInitialEvents == nil && (opts.ResourceVersion == "" || opts.ResourceVersion == "0"):
		initial = true
		if err := c.waitForOpts(ctx, opts.ResourceVersion); err != nil {
			return nil, err
		}
	case opts.ResourceVersion == "":
		// sendInitialEvents=false, no RV: from the store's current revision.
		rv0, err := c.waitConsistent(ctx)
		if err != nil {
			return nil, err
		}
		from = rv0
	case opts.ResourceVersion == "0":
		from = -1 // the cache's revision at registration
	default:
		rv, err := parseRV(opts.ResourceVersion)
		if err != nil {
			return nil, err
		}
		if err := c.waitForClientRev(ctx, rv); err != nil {
			return nil, err
		}
		from = rv
	}

	w := &Watcher{
		c:              c,
		pred:           pred,
		allowBookmarks: opts.AllowBookmarks,
		deadline:       opts.Deadline,
		done:           make(chan struct{}),
	}
	// The narrowest bucket first. A name is the narrowest of all: it is
	// how each of 10,000 kubelets watches its own Node.
	w.key, w.indexed = indexKey{"name", pred.name}, pred.hasName
	if !w.indexed {
		w.key, w.indexed = pred.indexFor(c.cfg.IndexedFields, c.cfg.IndexedLabels)
	}
	if !w.indexed && pred.namespace != "" {
		w.key, w.indexed = indexKey{"ns", pred.namespace}, true
	}
	buffer := c.cfg.WatcherBuffer
	if !w.indexed {
		buffer *= 10 // it gets every event of the resource
	}
	if opts.Buffer > 0 {
		buffer = opts.Buffer
	}
	w.out = make(chan *Event, buffer)

	var snap *snapshot
	var replay []*winEvent
	var bookmark *Event
	c.mu.RLock()
	w.startRev = c.mu.rev
	if initial {
		snap, _ = c.snapshotLocked(&pred, 0) // the current state cannot have expired
		if endBookmark {
			bookmark = c.bookmarkEvent(w.startRev, true)
		}
	} else {
		if from < 0 {
			from = c.mu.rev
		}
		if from < c.mu.win.startRev {
			oldest := c.mu.win.startRev
			c.mu.RUnlock()
			return nil, errTooOld(from, oldest)
		}
		var keep func(*winEvent) bool
		if w.indexed {
			keep = func(ev *winEvent) bool {
				return (ev.cur != nil && pred.matches(ev.cur)) || (ev.prev != nil && pred.matches(ev.prev))
			}
		}
		replay = c.mu.win.since(from, keep)
	}
	w.mu.lastRev = w.startRev
	// Registering under the read lock means no change can be applied
	// between the snapshot and registration; a change applied earlier but
	// dispatched later is skipped by its revision (startRev).
	added := c.reg.add(w)
	c.mu.RUnlock()
	if !added {
		return nil, ErrStopped
	}
	run := func() {
		w.runInitial(func(emit func(*Event) bool) bool {
			if snap != nil {
				ok := true
				snap.ascend("", func(e *entry) bool {
					if !pred.matches(e) {
						return true
					}
					ev, err := c.changeEvent(watch.Added, e, e.rev)
					if err != nil {
						// This goroutine owns out until the watch goes live:
						// the error is sent like the initial events, not
						// dropped when the buffer is full.
						c.cfg.Logger.Error("cannot build watch event", "key", e.key, "rev", e.rev, "err", err)
						emit(errorEvent(err))
						w.end(nil)
						ok = false
						return false
					}
					ok = emit(ev)
					return ok
				})
				if !ok {
					return false
				}
				if bookmark != nil {
					return emit(bookmark)
				}
				return true
			}
			for _, ev := range replay {
				e := w.eventFor(ev)
				if e != nil && e.Type == watch.Error {
					emit(e)
					w.end(nil)
					return false
				}
				if e != nil && !emit(e) {
					return false
				}
			}
			return true
		})
	}
	if !c.goOwned(run) {
		c.reg.remove(w)
		return nil, ErrStopped
	}
	release := context.AfterFunc(ctx, w.Stop)
	w.mu.Lock()
	w.mu.releaseCtx = release
	w.mu.Unlock()
	return w, nil
}

// waitForOpts waits as a read with this resourceVersion must: "" for a
// consistent state, "0" not at all, "N" until the cache has N.
func (c *Cache) waitForOpts(ctx context.Context, rv string) error {
	switch rv {
	case "":
		_, err := c.waitConsistent(ctx)
		return err
	case "0":
		return nil
	}
	n, err := parseRV(rv)
	if err != nil {
		return err
	}
	return c.waitForClientRev(ctx, n)
}

// runInitial delivers the initial events, then whatever dispatch queued
// meanwhile, then switches the watcher to direct delivery.
func (w *Watcher) runInitial(initial func(emit func(*Event) bool) bool) {
	emit := func(e *Event) bool {
		select {
		case w.out <- e:
			return true
		case <-w.done:
			return false
		}
	}
	if initial(emit) {
		for {
			w.mu.Lock()
			if w.mu.ended {
				w.mu.Unlock()
				break
			}
			if len(w.mu.pending) == 0 {
				w.mu.live = true
				w.mu.Unlock()
				return
			}
			batch := w.mu.pending
			w.mu.pending = nil
			w.mu.Unlock()
			sentAll := true
			for _, e := range batch {
				if !emit(e) {
					sentAll = false
					break
				}
			}
			if !sentAll {
				break
			}
		}
	}
	// Ended before going live: out is ours to close.
	w.mu.Lock()
	ev := w.mu.endEv
	w.mu.pending = nil
	w.mu.Unlock()
	if ev != nil {
		select {
		case w.out <- ev:
		default:
		}
	}
	close(w.out)
}

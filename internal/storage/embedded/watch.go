package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// ErrWatcherTooSlow ends a watch whose consumer fell more than
// Options.WatchBuffer events behind. The events delivered before it are
// valid; the caller re-watches from the last revision it received.
var ErrWatcherTooSlow = errors.New("embedded: watcher fell too far behind and was ended")

// watcher is one Watch. Its goroutine (run) first replays history from disk
// if the ring does not reach back far enough, then registers with the hub and
// forwards live events. Fields marked hub.mu are guarded by Store.hub.mu.
//
// Event values are shared by every watcher that receives the event (encode
// once, fan out): consumers must treat Event.Value as read-only.
type watcher struct {
	s      *Store
	ctx    context.Context
	prefix string

	out      chan storage.Event // Events(); closed when run returns
	wake     chan struct{}      // capacity 1: the hub queued events or ended w
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{} // closed when run has returned

	errMu sync.Mutex
	err   error

	// inHand is how many events run took from queue and has not yet
	// delivered; with len(queue) it is how far behind the consumer is.
	inHand atomic.Int64

	// Guarded by hub.mu.
	registered     bool
	progressWanted bool
	// queue holds the live events the hub handed over that run has not
	// taken; it grows with a burst rather than being allocated at
	// Options.WatchBuffer for every watcher (most are idle).
	queue   []storage.Event
	spare   []storage.Event // run's emptied batch, reused as the next queue
	hubDone bool            // the hub hands over nothing more
	hubEnd  error           // why the hub ended w
}

var _ storage.Watcher = (*watcher)(nil)

// outBuffer is how many events a watcher's goroutine can hand its consumer
// ahead of it. Unbuffered, every event cost two goroutine switches, and
// on a saturated CPU each switch waits its turn behind every runnable
// goroutine: at density 1,000 × 30 the watch cache then received pod
// events up to 600 ms (p50) after their commit with the in-memory
// loopback, up to 11 ms with TLS (buffered: 1–5 and 0.3–1 ms). Buffered,
// the goroutine hands over a whole batch and the consumer takes it in
// one wake-up. 128 events are 12 KB a watcher.
const outBuffer = 128

// Watch implements storage.Store.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (storage.Watcher, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if fromRevision < 0 {
		return nil, fmt.Errorf("embedded: watch %q from revision %d: negative revision", prefix, fromRevision)
	}
	if comp := s.compacted.Load(); fromRevision != 0 && fromRevision < comp {
		return nil, fmt.Errorf("embedded: watch %q: %w", prefix, &storage.CompactedError{Requested: fromRevision, Compacted: comp})
	}
	w := &watcher{
		s:      s,
		ctx:    ctx,
		prefix: prefix,
		out:    make(chan storage.Event, outBuffer),
		wake:   make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	s.startMu.Lock()
	select {
	case <-s.closing:
		s.startMu.Unlock()
		return nil, storage.ErrClosed
	default:
		s.wg.Add(1)
		s.startMu.Unlock()
	}
	cursor := fromRevision
	var catchup []storage.Event
	if fromRevision == 0 {
		// "From now": register synchronously so that every write
		// acknowledged after Watch returns is delivered.
		cursor = s.hub.currentRevision()
		var ok, closed bool
		catchup, ok, closed = s.hub.register(w, cursor)
		if closed || !ok {
			// !ok cannot happen (the ring always covers its own revision);
			// both mean the hub is shutting down.
			s.wg.Done()
			return nil, storage.ErrClosed
		}
	}
	go w.run(cursor, catchup, fromRevision == 0)
	return w, nil
}

func (w *watcher) Events() <-chan storage.Event { return w.out }

// signal wakes w's goroutine; a wake already pending covers this one.
func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) RequestProgress() { w.s.hub.requestProgress(w) }

// Stop ends the watch and waits for its goroutine; idempotent.
func (w *watcher) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

func (w *watcher) Err() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// run is the watcher goroutine. cursor is the revision of the last event
// considered (delivered or filtered out); nothing at or below it is sent.
func (w *watcher) run(cursor int64, catchup []storage.Event, registered bool) {
	err := w.serve(cursor, catchup, registered)
	w.s.hub.remove(w)
	w.errMu.Lock()
	w.err = err
	w.errMu.Unlock()
	close(w.out)
	close(w.done)
	w.s.wg.Done()
}

// errStopped is serve's internal "ended by Stop, ctx or Close" marker.
var errStopped = errors.New("stopped")

func (w *watcher) serve(cursor int64, catchup []storage.Event, registered bool) error {
	deliver := func(ev storage.Event) error {
		if ev.Type == storage.EventProgress {
			ev.Revision = max(ev.Revision, cursor)
		} else {
			if ev.Revision <= cursor {
				return nil // already delivered from disk
			}
			cursor = ev.Revision
		}
		select {
		case w.out <- ev:
			return nil
		case <-w.stop:
		case <-w.ctx.Done():
		case <-w.s.closing:
			return storage.ErrClosed
		}
		return errStopped
	}
	for !registered {
		var ok, closed bool
		catchup, ok, closed = w.s.hub.register(w, cursor)
		if closed {
			return storage.ErrClosed
		}
		if ok {
			break
		}
		events, last, err := w.s.readHistoryShared(w.ctx, cursor, w.prefix)
		if err != nil {
			return w.ended(err)
		}
		for _, ev := range events {
			if err := deliver(ev); err != nil {
				return w.ended(err)
			}
		}
		cursor = max(cursor, last)
	}
	for _, ev := range catchup {
		if err := deliver(ev); err != nil {
			return w.ended(err)
		}
	}
	var batch []storage.Event
	for {
		select {
		case <-w.wake:
			var ended bool
			var err error
			batch, ended, err = w.s.hub.take(w, batch)
			for i, ev := range batch {
				if err := deliver(ev); err != nil {
					return w.ended(err)
				}
				batch[i] = storage.Event{} // let the value be collected
				w.inHand.Add(-1)
			}
			if ended {
				return err
			}
		case <-w.stop:
			return nil
		case <-w.ctx.Done():
			return nil
		case <-w.s.closing:
			return storage.ErrClosed
		}
	}
}

// ended maps serve's stop reasons to the error Err reports: nil when the
// caller asked for the end (Stop or its ctx), the cause otherwise.
func (w *watcher) ended(err error) error {
	if errors.Is(err, errStopped) || (w.ctx.Err() != nil && errors.Is(err, w.ctx.Err())) {
		return nil
	}
	return err
}

// readHistory reads up to limit history events after revision after, from
// one Pebble snapshot: every key's, with their values if they have prefix,
// but not their previous values (readHistoryShared adds those for the
// events it returns). It fails with a CompactedError if that history is gone, and
// with ErrCorrupt if a revision is missing from the log (the log is
// contiguous by construction).
func (s *Store) readHistory(ctx context.Context, after int64, limit int, prefix string) ([]storage.Event, error) {
	var events []storage.Event
	// Only published revisions are read: they are durable (the writer
	// publishes after the fsync), whereas the snapshot may also hold the
	// writer's in-flight batch. The ring floor never exceeds the published
	// revision, so the caller still reaches the ring.
	published := s.hub.currentRevision()
	err := s.read(ctx, func() error {
		snap := s.db.NewSnapshot()
		defer snap.Close()
		comp, err := readMeta(snap, metaCompactedKey)
		if err != nil {
			return err
		}
		if after < comp {
			return fmt.Errorf("embedded: watch replay: %w", &storage.CompactedError{Requested: after, Compacted: comp})
		}
		it, err := snap.NewIter(&pebble.IterOptions{
			LowerBound: historyKey(after + 1),
			UpperBound: historyKey(published + 1),
		})
		if err != nil {
			return fmt.Errorf("embedded: watch replay after revision %d: %w", after, err)
		}
		defer it.Close()
		want := after + 1
		for ok := it.First(); ok && len(events) < limit; ok = it.Next() {
			v, err := it.ValueAndErr()
			if err != nil {
				return fmt.Errorf("embedded: watch replay at revision %d: %w", want, err)
			}
			ev, err := decodeHistoryFor(it.Key(), v, prefix)
			if err != nil {
				return err
			}
			if ev.Revision != want {
				return fmt.Errorf("embedded: history jumps from revision %d to %d: %w", want-1, ev.Revision, storage.ErrCorrupt)
			}
			events = append(events, ev)
			want++
		}
		if err := it.Error(); err != nil {
			return fmt.Errorf("embedded: watch replay after revision %d: %w", after, err)
		}
		if len(events) == 0 {
			// The ring starts above after, so the history for after+1 was
			// committed before it was published: it must be on disk.
			return fmt.Errorf("embedded: history for revision %d is missing: %w", after+1, storage.ErrCorrupt)
		}
		return nil
	})
	return events, err
}

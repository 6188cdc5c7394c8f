package cache

import (
	"context"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// listRetry is the pause between failed attempts to list the store. It is
// real time on purpose: it paces retries against a failing store and has no
// meaning to clients, so tests with a fake clock need not step it.
const listRetry = time.Second

// maxBatch bounds how many queued store events are applied under one lock.
const maxBatch = 512

// reflector is the state only the reflector goroutine touches.
type reflector struct {
	sw           storage.Watcher
	lastBookmark time.Time
	// bookmarkDue: a bookmark round was requested and waits for the
	// store's progress notification, so bookmarks carry a fresh revision.
	bookmarkDue bool
	initialized bool
	// tick paces window trimming and bookmarks. A timer re-armed after
	// each tick rather than a ticker, so any clock.Clock will do.
	tick clock.Timer
}

func (c *Cache) run(ctx context.Context) {
	defer c.wg.Done()
	r := &reflector{lastBookmark: c.cfg.Clock.Now(), tick: c.cfg.Clock.NewTimer(c.tickPeriod())}
	defer r.tick.Stop()
	for {
		err := c.listAndWatch(ctx, r)
		if ctx.Err() != nil {
			return
		}
		c.cfg.Logger.Warn("watch cache lost the store watch; re-listing", "err", err)
		if errors.Is(err, storage.ErrCompacted) || errors.Is(err, errStoreMoved) {
			continue // the store is fine, only our position is gone
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(listRetry):
		}
	}
}

func (c *Cache) tickPeriod() time.Duration {
	return max(min(c.cfg.BookmarkInterval/4, time.Second), time.Millisecond)
}

// listAndWatch loads the prefix and follows it until the store watch can
// no longer be resumed from the cache's revision.
func (c *Cache) listAndWatch(ctx context.Context, r *reflector) error {
	var (
		st  *state
		rev int64
		sw  storage.Watcher
		ok  bool
	)
	if !r.initialized {
		st, rev, ok = c.loadImage(ctx)
	}
	if !ok {
		var err error
		if st, rev, sw, err = c.listStore(ctx); err != nil {
			return err
		}
	}

	// The window restarts at the list, refilled from the store's history
	// before it where there is some (prefill.go): a client that was a
	// little behind when the server restarted resumes instead of
	// re-listing.
	pf := prefilled{win: newWindow(c.cfg.MinEvents, c.cfg.MaxEvents, c.cfg.ReconnectInterval, rev), sw: sw}
	if sw == nil {
		var err error
		if pf, err = c.prefill(ctx, st, rev); err != nil {
			return err
		}
		sw = pf.sw
	}

	c.metrics.initializations.Inc()
	c.mu.Lock()
	c.mu.st = st
	c.mu.win = pf.win
	c.mu.rev = max(c.mu.rev, rev)
	close(c.mu.revChanged)
	c.mu.revChanged = make(chan struct{})
	if r.initialized {
		// Watchers' positions are now lost; end them with 410 so clients
		// re-list, as upstream does when its cacher re-initializes.
		c.reg.endAll(errTooOld(rev, rev))
	}
	c.mu.Unlock()
	r.initialized = true
	c.metrics.objects.Set(float64(st.all.Len()))
	c.readyOnce.Do(func() { close(c.ready) })
	if len(pf.pending) > 0 {
		c.apply(pf.pending) // read by prefill, after the list
	}

	from := rev
	for {
		var err error
		if sw == nil {
			if sw, err = c.watchFrom(ctx, from); err != nil {
				return err
			}
		}
		r.sw = sw
		err = c.follow(ctx, r)
		sw.Stop()
		sw, r.sw = nil, nil
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Resume from where the cache is; only a compacted store (or a
		// failing one) forces a re-list.
		prev := from
		from = c.Revision()
		c.metrics.restarts.Inc()
		c.cfg.Logger.Info("store watch ended; resuming", "from", from, "err", err)
		if errors.Is(err, storage.ErrCompacted) {
			return err
		}
		if from == prev && from != 0 {
			// Nothing got through: do not spin on a watch that keeps
			// ending at once.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(listRetry / 10):
			}
		}
	}
}

// listStore reads the prefix from the store into a new state, with the
// revision it is at; at revision 0 it also returns the store watch from
// it, started before anything is published.
func (c *Cache) listStore(ctx context.Context) (*state, int64, storage.Watcher, error) {
	listStart := time.Now()
	kvs, rev, err := c.cfg.Store.List(ctx, c.cfg.Prefix)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("list %s: %w", c.cfg.Prefix, err)
	}
	listed := time.Since(listStart)
	var sw storage.Watcher
	if rev == 0 {
		// A brand-new store: watch "from now" before publishing anything,
		// then make sure now is still revision 0.
		if sw, err = c.watchFrom(ctx, 0); err != nil {
			return nil, 0, nil, err
		}
	}
	st := newState(c.cfg.Prefix, c.cfg.IndexedFields, c.cfg.IndexedLabels)
	for _, e := range c.newEntries(kvs) {
		st.put(e)
	}
	// A restart's time goes here at a million objects: say how much, and
	// whether reading the store or decoding took it.
	if took := time.Since(listStart); took >= time.Second {
		c.cfg.Logger.Info("filled from the store", "objects", len(kvs), "list", listed.Round(time.Millisecond), "took", took.Round(time.Millisecond))
	}
	return st, rev, sw, nil
}

// errStoreMoved: the store was written between a list at revision 0 and a
// watch "from now"; the list must be redone.
var errStoreMoved = errors.New("cache: store written between list and watch at revision 0")

// watchFrom starts the store watch for events after rev. The store reads
// revision 0 as "from now", not "from the beginning", so a watch from 0 is
// only gap-free if the store is still at revision 0 once it is registered.
func (c *Cache) watchFrom(ctx context.Context, rev int64) (storage.Watcher, error) {
	sw, err := c.cfg.Store.Watch(ctx, c.cfg.Prefix, rev)
	if err != nil {
		return nil, fmt.Errorf("watch %s from %d: %w", c.cfg.Prefix, rev, err)
	}
	if rev != 0 {
		return sw, nil
	}
	cur, err := c.cfg.Store.CurrentRevision(ctx)
	if err == nil && cur != 0 {
		err = errStoreMoved
	}
	if err != nil {
		sw.Stop()
		return nil, err
	}
	return sw, nil
}

// follow applies the store watch's events until it ends.
func (c *Cache) follow(ctx context.Context, r *reflector) error {
	events := r.sw.Events()
	batch := make([]storage.Event, 0, maxBatch)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return r.sw.Err()
			}
			batch = append(batch[:0], ev)
		drain:
			for len(batch) < maxBatch {
				select {
				case ev, ok := <-events:
					if !ok {
						break drain
					}
					batch = append(batch, ev)
				default:
					break drain
				}
			}
			c.apply(batch)
			if r.bookmarkDue {
				r.bookmarkDue = false
				c.sendBookmarks()
			}
		case now := <-r.tick.C():
			r.tick.Reset(c.tickPeriod())
			c.onTick(r, now)
		case <-c.progressReq:
			r.sw.RequestProgress()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *Cache) onTick(r *reflector, now time.Time) {
	c.mu.Lock()
	c.mu.win.trim(now)
	c.metrics.capacity.Set(float64(len(c.mu.win.buf)))
	c.mu.Unlock()
	c.sendDeadlineBookmarks(now)
	if now.Sub(r.lastBookmark) < c.cfg.BookmarkInterval {
		return
	}
	if r.bookmarkDue {
		// No progress came back for a whole interval: send what we have.
		c.sendBookmarks()
	}
	r.lastBookmark = now
	r.bookmarkDue = true
	r.sw.RequestProgress()
}

// newEntry decodes kv once, to learn its labels and fields (and to reject
// undecodable values before they are served), and keeps either the object
// or, by default, only the stored bytes.
func (c *Cache) newEntry(kv storage.KeyValue) (*entry, error) {
	decode := c.cfg.Decode
	if c.cfg.DecodeForIndex != nil && !c.cfg.RetainObjects {
		decode = c.cfg.DecodeForIndex
	}
	obj, err := decode(kv)
	if err != nil {
		return nil, err
	}
	l, f := c.cfg.Attrs(obj)
	e := &entry{rev: kv.ModRevision, createRev: kv.CreateRevision, size: int32(min(len(kv.Value), math.MaxInt32))}
	e.setKey(c.cfg.Prefix, kv.Key)
	e.setAttrs(l, f)
	switch {
	case c.cfg.RetainObjects:
		e.obj = obj
	case c.cfg.CompressValues:
		e.raw = c.compressor.compress(kv.Value)
	default:
		e.raw = kv.Value
	}
	return e, nil
}

// newEntries decodes a list into entries on every core: at a million
// objects decoding is most of a restart. Undecodable values become
// undecodable entries. It clears the values in kvs.
func (c *Cache) newEntries(kvs []storage.KeyValue) []*entry {
	entries := make([]*entry, len(kvs))
	const chunk = 256
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(goruntime.GOMAXPROCS(0), len(kvs)/chunk+1) {
		wg.Go(func() {
			for {
				lo := int(next.Add(chunk)) - chunk
				if lo >= len(kvs) {
					return
				}
				for i := lo; i < min(lo+chunk, len(kvs)); i++ {
					e, err := c.newEntry(kvs[i])
					if err != nil {
						e = c.undecodableEntry(kvs[i], err)
					}
					entries[i] = e
					// A value the entry keeps compressed is garbage now:
					// let it go before the list is done.
					kvs[i].Value = nil
				}
			}
		})
	}
	wg.Wait()
	return entries
}

// object returns e's object: the retained one (shared, read-only), or a
// fresh decode of the stored bytes (the caller's to keep).
func (c *Cache) object(e *entry) (runtime.Object, error) {
	if err := undecodableErr(e); err != nil {
		return nil, err
	}
	if e.obj != nil {
		return e.obj, nil
	}
	kv, err := c.keyValue(e)
	if err != nil {
		return nil, err
	}
	obj, err := c.cfg.Decode(kv)
	if err != nil {
		// It decoded when it was applied (perhaps only as far as indexing
		// needs, DecodeForIndex): a bug, or damage in what that skipped.
		return nil, internalError(fmt.Errorf("decoding %s at revision %d: %w", e.key, e.rev, err))
	}
	return obj, nil
}

// apply folds a batch of store events into the state and the window, then
// dispatches them. Decoding happens before taking the lock: it is most of
// the cost and readers need not wait for it.
func (c *Cache) apply(batch []storage.Event) {
	entries := make([]*entry, len(batch))
	for i, ev := range batch {
		if ev.Type != storage.EventPut {
			continue
		}
		kv := storage.KeyValue{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision, CreateRevision: ev.CreateRevision}
		e, err := c.newEntry(kv)
		if err != nil {
			e = c.undecodableEntry(kv, err)
		}
		entries[i] = e
	}
	now := c.cfg.Clock.Now()
	evs := make([]*winEvent, 0, len(batch))
	c.mu.Lock()
	base := c.mu.rev
	rev := base
	for i, ev := range batch {
		if ev.Revision <= base && ev.Type != storage.EventProgress {
			continue // already applied (a resumed watch may repeat)
		}
		rev = max(rev, ev.Revision)
		var we *winEvent
		switch ev.Type {
		case storage.EventPut:
			if entries[i] == nil {
				continue
			}
			if undecodableErr(entries[i]) != nil {
				if old := c.mu.st.get(ev.Key); old != nil {
					entries[i].attrs, entries[i].nlabels = old.attrs, old.nlabels
				}
			}
			prev := c.mu.st.put(entries[i])
			we = &winEvent{key: ev.Key, cur: entries[i], prev: prev, rev: ev.Revision, at: now}
		case storage.EventDelete:
			prev := c.mu.st.remove(ev.Key)
			if prev == nil {
				continue
			}
			we = &winEvent{key: ev.Key, prev: prev, rev: ev.Revision, at: now}
		default:
			continue
		}
		c.mu.win.add(we, now)
		evs = append(evs, we)
	}
	c.setRevLocked(rev)
	n := c.mu.st.all.Len()
	c.mu.Unlock()
	c.metrics.received.Add(float64(len(evs)))
	c.metrics.objects.Set(float64(n))
	c.dispatch(evs)
}

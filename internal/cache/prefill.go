package cache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Prefill: rebuilding the event window from store history at (re)list time.
//
// A fresh list at revision R used to start the window at R, so a client that
// had seen R' < R before an API server restart (it lagged a little when the
// server died) got 410 on its re-watch and re-listed: after a restart, every
// slightly-behind informer of the cluster re-lists at once — the relist storm
// the window exists to prevent. The store still has the history (it is only
// compacted periodically), so the cache replays it: it starts the store
// watch from F = max(compacted revision, R - Config.PrefillRevisions)
// instead of R. Events in (F, R] are already reflected in the listed state;
// they go into the window only (not into the state, not to watchers), with
// the previous object taken from the previous window event on the key or,
// for the first one, from the event's PrevValue. The window then starts at
// F, so watches, exact lists and continue tokens from any revision >= F
// work as if the cache had never restarted. Events after R are applied as
// usual: the same store watch continues, so there is no gap.
//
// If the history is gone (compacted while replaying) or the store fails,
// the window starts at R as before. If an event's previous value is unknown
// (an update that repaired a value the store could not read, which carries
// none: storage.Event.PrevValue) or does not decode, the window starts
// after that event instead: it only ever holds events it can replay
// exactly.

// prefillTimeout bounds the wait for the history up to the list revision.
// The store promises it (events in order, then the requested progress
// notification), so this is a safety net: a cache that cannot prefill
// starts with the old window rather than never becoming ready. Real time,
// like listRetry: it paces the store, not clients.
const prefillTimeout = time.Minute

// prefilled is the result of prefill: the window to publish, the store
// watch to follow (nil: start one from the list revision), and events after
// the list revision that were read while looking for its end.
type prefilled struct {
	win     *window
	sw      storage.Watcher
	pending []storage.Event
}

// prefill builds the window for a list of st at listRev. It only fails when
// ctx ends; any store trouble degrades to a window starting at listRev.
func (c *Cache) prefill(ctx context.Context, st *state, listRev int64) (prefilled, error) {
	none := prefilled{win: newWindow(c.cfg.MinEvents, c.cfg.MaxEvents, c.cfg.ReconnectInterval, listRev)}
	if c.cfg.PrefillRevisions <= 0 || listRev <= 1 {
		return none, nil
	}
	start := time.Now()
	comp, err := c.cfg.Store.CompactedRevision(ctx)
	if err != nil {
		return c.noPrefill(ctx, none, err)
	}
	// Revision 0 means "from now" to Watch, so history starts after 1 at
	// the earliest.
	from := max(comp, listRev-c.cfg.PrefillRevisions, 1)
	if from >= listRev {
		return none, nil
	}
	sw, err := c.cfg.Store.Watch(ctx, c.cfg.Prefix, from)
	if err != nil {
		return c.noPrefill(ctx, none, err)
	}
	// The prefix may have been quiet for a while before listRev: a
	// progress notification (at the store's current revision, hence at
	// least listRev) marks the end of the history we need.
	sw.RequestProgress()
	var hist, pending []storage.Event
	timeout := time.NewTimer(prefillTimeout)
	defer timeout.Stop()
	for done := false; !done; {
		select {
		case ev, ok := <-sw.Events():
			if !ok {
				err := sw.Err()
				sw.Stop()
				if err == nil {
					err = errors.New("store watch ended")
				}
				return c.noPrefill(ctx, none, err)
			}
			switch {
			case ev.Type == storage.EventProgress:
				done = ev.Revision >= listRev
			case ev.Revision <= listRev:
				hist = append(hist, ev)
			default:
				// The first event after the list: everything up to it
				// has been delivered.
				pending, done = append(pending, ev), true
			}
		case <-timeout.C:
			sw.Stop()
			return c.noPrefill(ctx, none, fmt.Errorf("history up to revision %d not delivered within %v", listRev, prefillTimeout))
		case <-ctx.Done():
			sw.Stop()
			return prefilled{}, ctx.Err()
		}
	}
	win := c.windowFromHistory(st, from, hist)
	c.logTimed(start, "prefilled the event window from store history",
		"from", win.startRev, "to", listRev, "events", win.len())
	return prefilled{win: win, sw: sw, pending: pending}, nil
}

func (c *Cache) noPrefill(ctx context.Context, none prefilled, err error) (prefilled, error) {
	if ctx.Err() != nil {
		return prefilled{}, ctx.Err()
	}
	c.cfg.Logger.Warn("cannot prefill the event window from store history; it starts at the list", "rev", none.win.startRev, "err", err)
	return none, nil
}

// windowFromHistory returns a window starting at from holding hist, the
// prefix's events in (from, listRev] in order, whose outcome st (the list
// at listRev) already reflects.
func (c *Cache) windowFromHistory(st *state, from int64, hist []storage.Event) *window {
	// last is the version of each key after the newest event seen so far
	// (nil: deleted); a key absent from it has not been seen.
	last := make(map[string]*entry)
	evs := make([]*winEvent, 0, len(hist))
	startRev := from
	// cut restarts the window after rev: the events so far cannot be
	// replayed exactly because rev's previous object is unknown.
	cut := func(rev int64) {
		clear(evs)
		evs, startRev = evs[:0], rev
	}
	for _, ev := range hist {
		var cur *entry
		if ev.Type == storage.EventPut {
			// The newest version of a key is the listed one: share it.
			if e := st.get(ev.Key); e != nil && e.rev == ev.Revision {
				cur = e
			} else if e, err := c.newEntry(storage.KeyValue{Key: ev.Key, Value: ev.Value, ModRevision: ev.Revision, CreateRevision: ev.CreateRevision}); err == nil {
				cur = e
			} else {
				c.cfg.Logger.Error("skipping undecodable object in history", "key", ev.Key, "rev", ev.Revision, "err", err)
				cut(ev.Revision)
				delete(last, ev.Key)
				continue
			}
		}
		prev, seen := last[ev.Key]
		switch {
		case seen:
		case ev.Type == storage.EventPut && ev.CreateRevision == ev.Revision:
			// A create: nothing before it.
		case ev.PrevValue != nil:
			e, err := c.newEntry(storage.KeyValue{Key: ev.Key, Value: ev.PrevValue, ModRevision: ev.PrevModRevision, CreateRevision: ev.CreateRevision})
			if err != nil {
				c.cfg.Logger.Error("skipping undecodable previous object in history", "key", ev.Key, "rev", ev.PrevModRevision, "err", err)
				cut(ev.Revision)
				last[ev.Key] = cur
				continue
			}
			prev = e
		default:
			// An update that replaced a value the store could not read:
			// its previous value is unknown.
			cut(ev.Revision)
			last[ev.Key] = cur
			continue
		}
		last[ev.Key] = cur
		if cur == nil && prev == nil {
			continue // a delete of something never seen: nothing to replay
		}
		evs = append(evs, &winEvent{key: ev.Key, cur: cur, prev: prev, rev: ev.Revision})
	}
	win := newWindow(c.cfg.MinEvents, c.cfg.MaxEvents, c.cfg.ReconnectInterval, startRev)
	// The events' real ages are unknown; dating them now keeps them for a
	// ReconnectInterval after the restart, which is when clients come back.
	now := c.cfg.Clock.Now()
	for _, we := range evs {
		we.at = now
		win.add(we, now)
	}
	return win
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// watchBuffer is how many events a watcher holds for a slow consumer
// before it stops reading etcd (which then buffers on its side).
const watchBuffer = 128

// ownStream gives a watch its own gRPC stream (the client shares one
// stream among watches whose contexts carry the same metadata). etcd
// answers a progress request only when every watch on the stream has
// caught up and none starts in the future, so a shared stream would let
// one watch replaying a long history, or one waiting for a future
// revision, hold back every other watch's progress notifications.
func (s *Store) ownStream(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "myriad-watch", strconv.FormatInt(s.streams.Add(1), 10))
}

// progressRetry paces repeated progress requests: etcd answers one only
// when every watch on the stream has caught up, and the member serving the
// stream may lag the revision the caller needs.
const progressRetry = 50 * time.Millisecond

// Watch implements storage.Store.
//
// The etcd watch starts at fromRevision itself, not after it, and drops
// the events at that revision: etcd accepts a watch from its compaction
// revision even though a delete at exactly that revision is gone from its
// history, so starting one revision early is what makes "fromRevision is
// older than the history" an error exactly when the contract says.
// Revision 0 is resolved to the current revision first (a linearizable
// read), so a write acknowledged before Watch returns is never reported.
func (s *Store) Watch(ctx context.Context, prefix string, fromRevision int64) (storage.Watcher, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := fromRevision
	if start == 0 {
		rev, err := s.CurrentRevision(ctx)
		if err != nil {
			return nil, fmt.Errorf("etcd: watch %q: %w", prefix, err)
		}
		start = rev
	} else if err := s.checkHistory(ctx, start); err != nil {
		return nil, fmt.Errorf("etcd: watch %q: %w", prefix, err)
	}
	ep, filter := s.etcdPrefix(prefix)
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{
		s:        s,
		prefix:   prefix,
		ep:       ep,
		filter:   filter,
		ctx:      wctx,
		cancel:   cancel,
		events:   make(chan storage.Event, watchBuffer),
		progress: make(chan struct{}, 1),
	}
	if !s.goStart() {
		cancel()
		return nil, storage.ErrClosed
	}
	stop := context.AfterFunc(s.ctx, cancel)
	go func() {
		defer s.wg.Done()
		defer stop()
		w.run(start)
	}()
	return w, nil
}

// checkHistory returns a *storage.CompactedError if etcd no longer has
// the history after rev.
func (s *Store) checkHistory(ctx context.Context, rev int64) error {
	if c := s.compacted.Load(); rev < c {
		return &storage.CompactedError{Requested: rev, Compacted: c}
	}
	err := s.do(ctx, false, "check history", "", func(ctx context.Context) error {
		_, err := s.cli.Get(leaderCtx(ctx), s.prefix+"/", clientv3.WithRev(rev), clientv3.WithCountOnly())
		if errors.Is(err, rpctypes.ErrFutureRev) {
			return nil // a watch from the future just waits for it
		}
		return err
	})
	if err == nil || !isCompacted(err) {
		return err
	}
	c, lerr := s.learnCompactRevision(ctx, rev)
	if lerr != nil {
		return fmt.Errorf("revision %d has been compacted (%w); reading the compaction revision: %w", rev, storage.ErrCompacted, lerr)
	}
	return &storage.CompactedError{Requested: rev, Compacted: c}
}

type watcher struct {
	s      *Store
	prefix string
	ep     string
	filter bool

	ctx      context.Context
	cancel   context.CancelFunc
	events   chan storage.Event
	progress chan struct{}
	// err is written by run before it closes events.
	err error
}

func (w *watcher) Events() <-chan storage.Event { return w.events }
func (w *watcher) Stop()                        { w.cancel() }
func (w *watcher) Err() error                   { return w.err }

// RequestProgress implements storage.Watcher. Requests made while one is
// pending are served by the same notification.
func (w *watcher) RequestProgress() {
	select {
	case w.progress <- struct{}{}:
	default:
	}
}

// run follows etcd from last (everything up to it delivered) and resumes
// the etcd watch whenever it breaks, until the watch is stopped or history
// it needs is compacted away.
func (w *watcher) run(last int64) {
	defer close(w.events)
	backoff := backoffStart
	p := progressState{stallAfter: w.s.attemptTimeout()}
	for {
		// A fresh stream per attempt: a stalled one may sit on a member
		// that stopped answering.
		actx, cancel := context.WithCancel(w.s.ownStream(leaderCtx(w.ctx)))
		// The client's Watch waits for etcd to confirm the watch; on a
		// member that went silent it would wait until the connection is
		// declared dead. Give up sooner: the channel then closes and the
		// watch is made again.
		giveUp := time.AfterFunc(w.s.attemptTimeout(), cancel)
		ch := w.s.cli.Watch(actx, w.ep, clientv3.WithPrefix(), clientv3.WithRev(last), clientv3.WithPrevKV())
		giveUp.Stop()
		before := last
		err := w.follow(actx, ch, &last, &p)
		cancel()
		if w.ctx.Err() != nil {
			if w.s.isClosed() {
				w.err = storage.ErrClosed
			}
			return
		}
		if errors.Is(err, storage.ErrCompacted) {
			w.err = err
			return
		}
		switch {
		case last != before:
			p.stallAfter = w.s.attemptTimeout()
		case errors.Is(err, errWatchStalled):
			// A watch replaying a long history answers no progress
			// request until it has caught up, which looks like a stall:
			// wait longer each time nothing came through, so a slow
			// replay is not restarted forever.
			p.stallAfter = min(2*p.stallAfter, stallMax)
		}
		// A broken or stalled stream, a member without a leader: resume
		// where we are, on whichever member the client reaches next.
		w.s.cfg.Logger.Info("etcd watch interrupted; resuming", "prefix", w.prefix, "from", last, "err", err)
		if last != before {
			backoff = backoffStart
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// errWatchStalled ends an etcd watch that neither delivers events nor
// answers a progress request for as long as a read attempt may take, while
// etcd itself answers (the stream's member is unreachable in a way the
// connection has not noticed yet). A false alarm costs a resumed stream.
var errWatchStalled = errors.New("etcd watch stalled: no events and no progress notification")

// stallMax caps how long a watch may stay silent with a progress request
// pending before it is made again.
const stallMax = 2 * time.Minute

// progressState is a pending RequestProgress: the revision the
// notification must reach, and when to ask etcd again.
type progressState struct {
	pending bool
	target  int64
	retry   *time.Timer
	// since is when the stream last showed life while a request was
	// pending: the request, or the latest event after it.
	since time.Time
	// stallAfter is how long the stream may stay silent with a request
	// pending before it counts as stalled.
	stallAfter time.Duration
}

func (p *progressState) timer() <-chan time.Time {
	if p.retry == nil || !p.pending {
		return nil
	}
	return p.retry.C
}

// follow delivers one etcd watch's responses until it ends.
func (w *watcher) follow(wctx context.Context, ch clientv3.WatchChan, last *int64, p *progressState) error {
	ask := func() {
		// Bounded: the client hands the request to the stream's loop,
		// which is stuck while the stream is being (re)made on a member
		// that does not answer.
		rctx, cancel := context.WithTimeout(wctx, progressRetry)
		err := w.s.cli.RequestProgress(rctx)
		cancel()
		if err != nil && w.ctx.Err() == nil {
			w.s.cfg.Logger.Debug("etcd progress request failed", "prefix", w.prefix, "err", err)
		}
		if p.retry == nil {
			p.retry = time.NewTimer(progressRetry)
		} else {
			p.retry.Reset(progressRetry)
		}
	}
	if p.pending {
		ask() // the request was made on the previous stream
	}
	defer func() {
		if p.retry != nil {
			p.retry.Stop()
		}
	}()
	for {
		select {
		case resp, ok := <-ch:
			if !ok {
				return errors.New("etcd watch channel closed")
			}
			if resp.CompactRevision != 0 {
				w.s.noteCompacted(resp.CompactRevision)
				return &storage.CompactedError{Requested: *last, Compacted: resp.CompactRevision}
			}
			if err := resp.Err(); err != nil {
				return err
			}
			if resp.Canceled {
				return errors.New("etcd watch canceled")
			}
			if resp.IsProgressNotify() {
				rev := resp.Header.Revision
				switch {
				case p.pending && rev >= p.target:
					// Everything up to rev has been delivered, and maybe
					// more: report the newer of the two.
					p.pending = false
					*last = max(*last, rev)
				case !p.pending && rev > *last:
					// Asked for by another watch on the same stream;
					// still a true promise for this one.
					*last = rev
				default:
					continue
				}
				if !w.send(storage.Event{Type: storage.EventProgress, Revision: *last}) {
					return nil
				}
				continue
			}
			for _, ev := range resp.Events {
				if ev.Kv.ModRevision <= *last {
					continue // at or before the revision we started from
				}
				e, ok, err := w.convert(ev)
				if err != nil {
					return err
				}
				p.since = time.Now()
				*last = ev.Kv.ModRevision
				if ok && !w.send(e) {
					return nil
				}
			}
		case <-w.progress:
			// The promise is about the store's revision at the time of
			// the call, which the member serving this stream may not
			// have reached yet: read it linearizably, then ask until a
			// notification reaches it.
			rev, err := w.s.CurrentRevision(w.ctx)
			if err != nil {
				if w.ctx.Err() != nil {
					return nil
				}
				// Keep the request; the retry timer asks again.
				w.s.cfg.Logger.Debug("etcd progress: reading the current revision", "err", err)
				rev = *last
			}
			p.target = max(p.target, rev)
			if !p.pending {
				p.since = time.Now()
			}
			p.pending = true
			ask()
		case <-p.timer():
			if time.Since(p.since) > p.stallAfter {
				if _, err := w.s.CurrentRevision(w.ctx); err == nil {
					// etcd answers, this stream does not.
					p.since = time.Now()
					return errWatchStalled
				}
			}
			ask()
		case <-w.ctx.Done():
			return nil
		}
	}
}

func (w *watcher) send(e storage.Event) bool {
	select {
	case w.events <- e:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// convert maps an etcd event; ok is false for one the watch filters out.
func (w *watcher) convert(ev *clientv3.Event) (storage.Event, bool, error) {
	key, ok := w.s.myriadKey(ev.Kv.Key)
	if !ok || (w.filter && !strings.HasPrefix(key, w.prefix)) {
		return storage.Event{}, false, nil
	}
	switch ev.Type {
	case mvccpb.PUT:
		e := storage.Event{Type: storage.EventPut, Key: key, Value: nonNil(ev.Kv.Value), Revision: ev.Kv.ModRevision, CreateRevision: ev.Kv.CreateRevision}
		if ev.PrevKv != nil {
			e.PrevValue, e.PrevModRevision = nonNil(ev.PrevKv.Value), ev.PrevKv.ModRevision
		}
		// An update whose previous value etcd compacted away carries
		// none, which the contract reads as "unknown".
		return e, true, nil
	case mvccpb.DELETE:
		if ev.PrevKv == nil {
			// A delete always carries the deleted value; etcd lost it
			// to a compaction racing this watch. Make the consumer
			// re-list rather than guess.
			return storage.Event{}, false, fmt.Errorf("delete of %q at revision %d without its previous value: %w", key, ev.Kv.ModRevision, storage.ErrCompacted)
		}
		return storage.Event{
			Type: storage.EventDelete, Key: key, Revision: ev.Kv.ModRevision,
			CreateRevision: ev.PrevKv.CreateRevision,
			PrevValue:      nonNil(ev.PrevKv.Value), PrevModRevision: ev.PrevKv.ModRevision,
		}, true, nil
	}
	return storage.Event{}, false, fmt.Errorf("etcd watch: unknown event type %v", ev.Type)
}

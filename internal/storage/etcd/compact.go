package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// compactRevKey is upstream's compaction election key. It lives outside
// the prefix (compaction is cluster-wide), so Myriad's API servers and
// upstream's take turns on one etcd. Myriad stores in it the revision it
// compacts to.
const compactRevKey = "compact_rev_key"

func isCompacted(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted) || errors.Is(err, storage.ErrCompacted)
}

// noteCompacted raises the known compaction revision to rev.
func (s *Store) noteCompacted(rev int64) {
	for {
		cur := s.compacted.Load()
		if rev <= cur || s.compacted.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// Compact implements storage.Store with etcd's compaction (cluster-wide:
// it discards the history of every prefix).
func (s *Store) Compact(ctx context.Context, revision int64) error {
	defer s.metrics.observe("compact", "", time.Now())
	if revision <= s.compacted.Load() {
		return s.checkOpen()
	}
	// Compaction is idempotent, so it retries like a read.
	err := s.do(ctx, false, "compact", strconv.FormatInt(revision, 10), func(ctx context.Context) error {
		_, err := s.cli.Compact(leaderCtx(ctx), revision)
		return err
	})
	switch {
	case err == nil:
		s.noteCompacted(revision)
		return nil
	case isCompacted(err):
		return nil // etcd is compacted at or past revision already
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("etcd: compact to %d: beyond the current revision: %w", revision, err)
	}
	s.metrics.fail("compact", "")
	return err
}

// CompactedRevision implements storage.Store. etcd does not report its
// compaction revision directly; the store learns it from its own
// compactions, from every other Myriad API server's coordinated
// compaction (it follows compact_rev_key), from etcd's compaction revision
// at start-up, and from any watch or read that hits a compacted revision.
// A compaction made outside Myriad since the store started (etcdctl) is
// only seen on the first such hit.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	return s.compacted.Load(), ctx.Err()
}

// CompactCoordinated compacts to revision unless another API server has
// compacted since this one last tried: upstream's election, a transaction
// on compact_rev_key's version. Every server calls it once per compaction
// interval; in each interval the first to call with the current version
// wins and compacts, the others learn the new version and report false.
// A new server therefore loses its first round.
func (s *Store) CompactCoordinated(ctx context.Context, revision int64) (compacted bool, err error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	var resp *clientv3.TxnResponse
	// Retrying is harmless: a repeat of an applied transaction fails the
	// version compare and merely loses the round.
	err = s.do(ctx, false, "compact election", compactRevKey, func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(leaderCtx(ctx)).
			If(clientv3.Compare(clientv3.Version(compactRevKey), "=", s.compactMu.version)).
			Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(revision, 10))).
			Else(clientv3.OpGet(compactRevKey)).
			Commit()
		return err
	})
	if err != nil {
		return false, err
	}
	if !resp.Succeeded {
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			s.compactMu.version = 0 // deleted behind our back: start over
		} else {
			s.compactMu.version = kvs[0].Version
			s.noteCompactRevKey(kvs[0])
		}
		return false, nil
	}
	s.compactMu.version++
	if err := s.Compact(ctx, revision); err != nil {
		return false, err
	}
	return true, nil
}

func (s *Store) noteCompactRevKey(kv *mvccpb.KeyValue) {
	if rev, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil && rev > 0 {
		s.noteCompacted(rev)
	}
}

// learnCompactRevision asks etcd for its compaction revision, known to be
// above rev: a watch from rev is refused with it.
func (s *Store) learnCompactRevision(ctx context.Context, rev int64) (int64, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	ch := s.cli.Watch(s.ownStream(leaderCtx(ctx)), s.prefix+"/\x00compaction-probe", clientv3.WithRev(rev))
	for resp := range ch {
		if resp.CompactRevision != 0 {
			s.noteCompacted(resp.CompactRevision)
			return resp.CompactRevision, nil
		}
		if err := resp.Err(); err != nil {
			return 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("etcd reported no compaction revision")
}

// followCompactions keeps s.compacted current: etcd's compaction
// revision once at start, then every update of compact_rev_key.
func (s *Store) followCompactions() {
	defer s.wg.Done()
	probed := false
	for s.ctx.Err() == nil {
		if err := s.followCompactionsOnce(&probed); err != nil && s.ctx.Err() == nil {
			s.cfg.Logger.Debug("following etcd compactions", "err", err)
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) followCompactionsOnce(probed *bool) error {
	ctx, cancel := s.opCtx(s.ctx)
	resp, err := s.cli.Get(leaderCtx(ctx), compactRevKey)
	if err == nil && !*probed {
		_, perr := s.cli.Get(leaderCtx(ctx), s.prefix+"/", clientv3.WithRev(1), clientv3.WithCountOnly())
		switch {
		case perr == nil:
			*probed = true
		case isCompacted(perr):
			if _, err = s.learnCompactRevision(ctx, 1); err == nil {
				*probed = true
			}
		}
	}
	cancel()
	if err != nil {
		return err
	}
	if len(resp.Kvs) > 0 {
		s.noteCompactRevKey(resp.Kvs[0])
	}
	wctx, wcancel := context.WithCancel(s.ownStream(leaderCtx(s.ctx)))
	defer wcancel()
	for wr := range s.cli.Watch(wctx, compactRevKey, clientv3.WithRev(resp.Header.Revision+1)) {
		if wr.CompactRevision != 0 {
			s.noteCompacted(wr.CompactRevision)
			return nil // start over from a fresh read
		}
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			if ev.Type == mvccpb.PUT {
				s.noteCompactRevKey(ev.Kv)
			}
		}
	}
	return nil
}

package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Store is the embedded storage.Store. Create it with Open; it is safe for
// concurrent use.
//
// Goroutines: the writer and its syncer (writer.go), the checkpointer
// (checkpoint.go), the compaction pacer (pacing.go) and one per running
// watch (watch.go).
// Close stops and joins all of them before closing Pebble.
type Store struct {
	opts Options
	db   *pebble.DB
	// pebbleOpts are the options db was opened with, defaults filled in
	// (for writing sstables to ingest, checkpoint_write.go).
	pebbleOpts *pebble.Options

	// ops hands writes to the writer goroutine. It is unbuffered on purpose:
	// a send succeeds only when the writer takes the op, so an op is never
	// stranded in a buffer after the writer has exited, and a caller whose
	// context ends while it waits in the queue is simply never taken.
	ops     chan *writeOp
	closing chan struct{} // closed by Close; stops the writer and watchers
	// startMu orders wg.Add for new watch goroutines before Close's
	// wg.Wait: a watch either starts before closing is closed, and is
	// joined, or sees it closed and does not start.
	startMu  sync.Mutex
	closeOne sync.Once
	closeErr error
	wg       sync.WaitGroup // writer and watch goroutines

	// rev is the revision of the latest acknowledged write. Only the syncer
	// (writer.go) stores it, after the batch is durable and published to
	// watchers.
	rev atomic.Int64
	// staged is the revision of the latest write applied to Pebble, durable
	// or not. Owned by the writer goroutine.
	staged int64
	// acked is closed and replaced (under ackMu) each time rev advances, to
	// wake readers waiting in awaitDurable.
	ackMu sync.Mutex
	acked chan struct{}
	// compacted is the newest compacted revision; stored under compactMu
	// after the compaction is durable.
	compacted atomic.Int64
	compactMu sync.Mutex
	// lastRetire is when Compact last deleted obsolete history
	// (Options.RetireInterval), and retired the revision it deleted up to
	// (0 when this process has not: retire records may be left from
	// before). Guarded by compactMu.
	lastRetire time.Time
	retired    int64
	// writeErr is set (once) when Pebble fails a commit: from then on the
	// store refuses writes but keeps serving reads. See writer.go.
	writeErr atomic.Pointer[error]

	hub *hub
	// history shares replays' reads of the history log (historyshare.go).
	history historyShare

	// pacer paces compactions (pacing.go); nil when Options.CompactionYield
	// disables it.
	pacer *pacer

	// index is the in-memory key index (keyindex.go), which Open loads
	// before starting the writer.
	index *keyIndex
	// pending holds the changes to the index made by the batch the writer
	// is staging. Owned by the writer goroutine.
	pending map[string]pendingKey
	// checkpointRev is the revision of the latest key-index checkpoint
	// (checkpoint.go); the syncer wakes runCheckpoints through
	// checkpointWake (capacity 1) after a batch that reaches revision
	// checkpointAt, when one may be due.
	checkpointRev  atomic.Int64
	checkpointAt   atomic.Int64
	checkpointWake chan struct{}
	checkpointMu   sync.Mutex // held while a checkpoint is written

	// dbMu keeps Pebble open while a read is in flight: readers hold it
	// shared, Close takes it exclusively before db.Close (Pebble panics on
	// use after close).
	dbMu struct {
		sync.RWMutex
		closed bool
	}
}

var _ storage.Store = (*Store)(nil)

// Open opens (creating if needed) the store in opts.Dir and starts its writer
// goroutine. ctx bounds nothing after Open returns; it is checked before the
// (possibly slow, WAL-replaying) open.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cache := pebble.NewCache(opts.CacheSize)
	defer cache.Unref() // Pebble holds its own reference while open.
	fs := opts.FS
	var pace *pacer
	if opts.CompactionYield > 0 {
		pace = newPacer(opts.CompactionYield)
		fs = pacedFS{FS: fs, pacer: pace}
	}
	popts := &pebble.Options{
		FS:           fs,
		Cache:        cache,
		MemTableSize: opts.MemTableSize,
		// See Options.L0CompactionThreshold.
		L0CompactionThreshold: opts.L0CompactionThreshold,
		L0StopWritesThreshold: 4 * opts.L0CompactionThreshold,
		Logger:                pebbleLogger{opts.Logger},
		FormatMajorVersion:    pebble.FormatNewest,
	}
	// Bloom filters on every level (later levels inherit L0's policy): a
	// point read (an index or history record) then skips the levels that
	// do not hold its key instead of probing each level's index. When
	// Creates still probed the LSM for their key, that miss showed as a
	// third of the store's CPU at 10k objects.
	popts.Levels[0].FilterPolicy = bloom.FilterPolicy(10)
	if opts.BlobValueMinSize > 0 {
		policy := pebble.ValueSeparationPolicy{
			Enabled:     true,
			MinimumSize: opts.BlobValueMinSize,
			// How many blob files one sstable's values may be spread over
			// before a compaction copies its values into new blob files
			// (cmd/pebble's setting). 100 made updates at 1M objects
			// cheaper (fewer values copied by compactions) but a
			// key-order List, what the caches read at start, 1.6-3.8x
			// slower: Pebble's value fetcher keeps five blob files open
			// (docs/bench/storage.md).
			MaxBlobReferenceDepth: 10,
			// Rewrite a blob file once a fifth of it is garbage (compacted
			// history) and it is five minutes old, so disk usage stays
			// bounded.
			RewriteMinimumAge:  5 * time.Minute,
			TargetGarbageRatio: 0.2,
		}
		popts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return policy }
	}
	popts.EnsureDefaults()
	start := time.Now()
	db, err := pebble.Open(opts.Dir, popts)
	if err != nil {
		return nil, fmt.Errorf("embedded: opening pebble in %s: %w", opts.Dir, err)
	}
	opened := time.Since(start)
	err = checkFormat(db, opts.Dir)
	if err == nil {
		err = removeCheckpointTmp(opts.FS, opts.Dir)
	}
	var cur int64
	if err == nil {
		cur, err = readMeta(db, metaCurrentKey)
	}
	if err == nil {
		var comp int64
		comp, err = readMeta(db, metaCompactedKey)
		if err == nil && comp > cur {
			err = fmt.Errorf("embedded: compacted revision %d is newer than current revision %d: %w", comp, cur, storage.ErrCorrupt)
		}
		var (
			index *keyIndex
			ckpt  int64
		)
		if err == nil {
			ckpt, err = readMeta(db, metaCheckpointKey)
		}
		if err == nil {
			index, err = loadKeyIndex(db, cur, comp, ckpt, opts.Logger)
		}
		if err == nil {
			// A restart waits for this: say what it took (Pebble's open
			// replays its write-ahead log; the key index replays the key
			// log's writes since the checkpoint).
			opts.Logger.Info("embedded store opened", "revision", cur, "keys", index.Len(), "keyLogReplayed", cur-ckpt,
				"pebble", opened.Round(time.Millisecond), "took", time.Since(start).Round(time.Millisecond))
			s := &Store{
				pebbleOpts:     popts,
				index:          index,
				pending:        map[string]pendingKey{},
				checkpointWake: make(chan struct{}, 1),
				opts:           opts,
				db:             db,
				ops:            make(chan *writeOp),
				closing:        make(chan struct{}),
				acked:          make(chan struct{}),
			}
			s.rev.Store(cur)
			s.staged = cur
			s.compacted.Store(comp)
			s.checkpointRev.Store(ckpt)
			s.hub = newHub(cur, opts.WatchRingEvents, opts.WatchRingBytes)
			s.wg.Add(2)
			go s.runWriter()
			go s.runCheckpoints()
			if pace != nil {
				s.pacer = pace
				s.wg.Add(1)
				go s.runPacing()
			}
			return s, nil
		}
	}
	_ = db.Close()
	return nil, err
}

// readMeta reads a meta revision; a missing key means 0 (a new store).
func readMeta(r pebble.Reader, key string) (int64, error) {
	v, closer, err := r.Get([]byte(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedded: reading %s: %w", key, err)
	}
	defer closer.Close()
	return decodeMeta(key, v)
}

// read runs f with Pebble guaranteed open.
func (s *Store) read(ctx context.Context, f func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.dbMu.RLock()
	defer s.dbMu.RUnlock()
	if s.dbMu.closed {
		return storage.ErrClosed
	}
	return f()
}

// awaitDurable waits until every revision up to rev is acknowledged.
//
// Pebble makes a batch visible to readers when it is applied, before its
// WAL fsync returns, so a read can observe the writer's in-flight batch. Such
// a result is held back until the batch is durable: a reader never sees a
// write that a crash could still undo. This costs a read that races a commit
// at most two fsyncs (the writer may have applied the next batch while the
// previous one syncs). If the commit fails instead, the store is read-only and
// the failed batch's fate is unknown; the read then returns what it saw.
func (s *Store) awaitDurable(ctx context.Context, rev int64) error {
	for {
		s.ackMu.Lock()
		ch := s.acked
		s.ackMu.Unlock()
		if s.rev.Load() >= rev || s.writeErr.Load() != nil {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closing:
			return storage.ErrClosed
		}
	}
}

// advance records that every revision up to rev is acknowledged and wakes
// readers waiting for it. Only the syncer (writer.go) calls it.
func (s *Store) advance(rev int64) {
	s.rev.Store(rev)
	s.ackMu.Lock()
	close(s.acked)
	s.acked = make(chan struct{})
	s.ackMu.Unlock()
}

// CurrentRevision implements storage.Store.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	return s.rev.Load(), nil
}

// CompactedRevision implements storage.Store.
func (s *Store) CompactedRevision(ctx context.Context) (int64, error) {
	if err := s.usable(ctx); err != nil {
		return 0, err
	}
	return s.compacted.Load(), nil
}

func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-s.closing:
		return storage.ErrClosed
	default:
		return nil
	}
}

// Health implements storage.Store: it fails once the store is closed or a
// write has failed (the store is then read-only, see writer.go).
func (s *Store) Health(ctx context.Context) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if p := s.writeErr.Load(); p != nil {
		return fmt.Errorf("embedded: store is read-only after a failed write: %w", *p)
	}
	return nil
}

// Compact implements storage.Store. It first records the compacted
// revision (fsync'd), after which no watch can start at or below it; then
// it deletes the history that writes at or below revision made obsolete,
// as their retire records say, together with those retire records. What
// stays is each key's write that was current at revision: a live key's
// holds its value, and one superseded later holds the previous value of
// an event a watch may still replay. The deletions go in chunks
// (Options.CompactChunk), so a compaction of millions of revisions never
// puts one huge batch ahead of the writer's; a crash midway leaves retire
// records that a later compaction picks up. The deleting is done at most
// once per Options.RetireInterval; a compaction sooner than that leaves it
// to a later one (to the same revision or newer). It does not go through the writer: the
// writer only adds records above the current revision, which is never
// below revision.
func (s *Store) Compact(ctx context.Context, revision int64) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	if cur := s.rev.Load(); revision > cur {
		return fmt.Errorf("embedded: compact to revision %d: newer than current revision %d", revision, cur)
	}
	if p := s.writeErr.Load(); p != nil {
		return fmt.Errorf("embedded: compact to revision %d: store is read-only after a failed write: %w", revision, *p)
	}
	return s.read(ctx, func() error {
		if revision > s.compacted.Load() {
			b := s.db.NewBatch()
			defer b.Close()
			if err := b.Set([]byte(metaCompactedKey), encodeMeta(metaCompactedKey, revision), nil); err != nil {
				return err
			}
			if err := s.commitSynced(b); err != nil {
				return fmt.Errorf("embedded: compact to revision %d: %w", revision, err)
			}
			s.compacted.Store(revision)
		}
		comp := s.compacted.Load()
		if s.retired >= comp || s.opts.RetireInterval > 0 && time.Since(s.lastRetire) < s.opts.RetireInterval {
			return nil
		}
		s.lastRetire = time.Now()
		if err := s.retireHistory(ctx, comp); err != nil {
			return fmt.Errorf("embedded: compacted to revision %d, but deleting its obsolete history failed (a later compaction retries): %w", comp, err)
		}
		s.retired = comp
		return nil
	})
}

// commitSynced commits b and waits for its fsync. A failed WAL write (a
// full disk) is as fatal to Pebble's commit pipeline here as in the writer:
// commit the same way, so it comes back as an error and the store turns
// read-only.
func (s *Store) commitSynced(b *pebble.Batch) error {
	err := s.applyNoSyncWait(b)
	if err == nil {
		err = b.SyncWait()
	}
	if err != nil {
		return s.turnReadOnly(err)
	}
	return nil
}

// retireHistory deletes every history record that the retire records at or
// below revision name, and those retire records, committing every
// Options.CompactChunk retire records. A damaged retire record is logged
// and dropped: the history it named stays on disk (it is never read),
// which costs space, not correctness.
func (s *Store) retireHistory(ctx context.Context, revision int64) error {
	upper := retireKey(revision + 1)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{retirePrefix}, UpperBound: upper})
	if err != nil {
		return err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	// flush deletes the retire records in [lower, to) with the history
	// they name, already in b.
	lower := []byte{retirePrefix}
	chunks := 0
	flush := func(to []byte) error {
		if chunks++; chunks > 1 {
			// Close waits for this compaction, and a cancelled caller
			// wants it over: stop between chunks.
			if err := s.usable(ctx); err != nil {
				return err
			}
		}
		if err := b.DeleteRange(lower, to, nil); err != nil {
			return err
		}
		// No fsync: deleting garbage need not be durable (a crash leaves
		// it, and its retire records, to the next compaction), and a sync
		// per chunk would add WAL syncs under the writer's.
		if err := s.applyUnsynced(b); err != nil {
			return s.turnReadOnly(err)
		}
		b.Close()
		b = s.db.NewBatch()
		lower = to
		return nil
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		rev, prev, flags, err := decodeRetire(it.Key(), v)
		if err != nil {
			s.opts.Logger.Error("embedded store: dropping a damaged retire record; the history it names stays on disk", "err", err)
			continue
		}
		if err := b.Delete(historyKey(prev), nil); err != nil {
			return err
		}
		if flags&retireSelf != 0 {
			if err := b.Delete(historyKey(rev), nil); err != nil {
				return err
			}
		}
		if n++; n%s.opts.CompactChunk == 0 {
			if err := flush(retireKey(rev + 1)); err != nil {
				return err
			}
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return flush(upper)
}

// Close implements storage.Store. It is idempotent: it stops the writer (ops
// not yet taken fail with ErrClosed; a batch already being committed finishes
// and is acknowledged), ends every watch with ErrClosed, joins all goroutines
// and closes Pebble.
func (s *Store) Close() error {
	s.closeOne.Do(func() {
		s.startMu.Lock()
		close(s.closing)
		s.startMu.Unlock()
		s.hub.closeAll()
		s.wg.Wait()
		if s.pacer != nil {
			// Pebble's Close waits for running compactions: let them
			// finish at full speed.
			s.pacer.active.Store(false)
		}
		s.dbMu.Lock()
		s.dbMu.closed = true
		s.dbMu.Unlock()
		if err := s.db.Close(); err != nil {
			s.closeErr = fmt.Errorf("embedded: closing pebble: %w", err)
		}
	})
	return s.closeErr
}

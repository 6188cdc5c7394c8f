package embedded

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

type opKind uint8

const (
	opCreate opKind = iota + 1
	opUpdate
	opDelete
)

// writeOp is one queued write. The writer answers on done exactly once for
// every op it takes from Store.ops.
type writeOp struct {
	ctx      context.Context
	kind     opKind
	key      string
	value    []byte
	expected int64 // Update/Delete precondition; 0 = unconditional Delete
	// peek is the key's current version as the caller read it before queueing
	// an Update (peeked: the read succeeded). Its value becomes the event's
	// PrevValue when its ModRevision is still the key's current one, which
	// keeps the LSM read out of the single writer's serial path; see peek.
	peek   storage.KeyValue
	peeked bool
	done   chan writeResult
}

type writeResult struct {
	rev  int64
	prev storage.KeyValue // the deleted value, for Delete
	err  error
}

// Create implements storage.Store.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	r := s.submit(ctx, &writeOp{kind: opCreate, key: key, value: value})
	return r.rev, r.err
}

// Update implements storage.Store.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	op := &writeOp{kind: opUpdate, key: key, value: value, expected: expectedRevision}
	s.peek(ctx, op)
	r := s.submit(ctx, op)
	return r.rev, r.err
}

// UpdateFrom is Update for a caller that already holds the value it
// replaces: prev is key's value at prev.ModRevision (the expected
// revision), as read from this store or from a watch of it. It saves the
// read Update makes for the event's PrevValue. prev.Value is kept, shared,
// in the event: the caller must not modify it. If prev.ModRevision is not
// the key's current revision the update fails with a conflict, as Update.
func (s *Store) UpdateFrom(ctx context.Context, key string, value []byte, prev storage.KeyValue) (int64, error) {
	op := &writeOp{kind: opUpdate, key: key, value: value, expected: prev.ModRevision, peek: prev, peeked: true}
	r := s.submit(ctx, op)
	return r.rev, r.err
}

// peek reads op's key before the op is queued, in the caller's goroutine,
// for the event's PrevValue. Reading it in the writer would cost one LSM
// lookup per update serialized behind every other write (the key index
// exists to avoid exactly that, see keyindex.go); here the reads of
// concurrent callers overlap each other and the writer's fsync. The writer
// uses the result only if the key's ModRevision has not moved since (a
// revision names one write, so the value is then exactly the current one)
// and reads the value itself otherwise. A failed peek is not an error.
func (s *Store) peek(ctx context.Context, op *writeOp) {
	_ = s.read(ctx, func() error {
		s.index.mu.RLock()
		m, found := s.index.get(op.key)
		s.index.mu.RUnlock()
		if found {
			kv, err := readValue(s.db, op.key, m.mod, m.create)
			op.peek, op.peeked = kv, err == nil
		}
		return nil
	})
}

// Delete implements storage.Store.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	r := s.submit(ctx, &writeOp{kind: opDelete, key: key, expected: expectedRevision})
	return r.prev, r.rev, r.err
}

// submit queues op for the writer and waits for its result. A caller whose
// ctx ends before the writer takes the op gets ctx.Err() and the op is never
// applied; once taken, the op's outcome is reported whatever ctx does,
// because it may already be durable.
func (s *Store) submit(ctx context.Context, op *writeOp) writeResult {
	if err := ctx.Err(); err != nil {
		return writeResult{err: err}
	}
	if p := s.writeErr.Load(); p != nil {
		return writeResult{err: fmt.Errorf("embedded: write to %q refused, store is read-only after a failed write: %w", op.key, *p)}
	}
	op.ctx = ctx
	op.done = make(chan writeResult, 1)
	select {
	case s.ops <- op:
	case <-ctx.Done():
		return writeResult{err: ctx.Err()}
	case <-s.closing:
		return writeResult{err: storage.ErrClosed}
	}
	return <-op.done
}

// runWriter is the single writer goroutine: group commit, pipelined. It
// blocks for one op, then drains whatever else is already queued (bounded by
// MaxBatchOps and MaxBatchBytes), applies them in order to one indexed batch
// — so each op's precondition sees the ops before it — and hands the batch
// to Pebble with its WAL fsync requested but not awaited
// (DB.ApplyNoSyncWait). A second goroutine, the syncer (runSyncer), waits for
// each batch's fsync in order and only then publishes its events and
// acknowledges its ops. So the writer prepares and applies batch N+1 while
// batch N's fsync is in flight, and nothing is acknowledged, published or
// (see Store.awaitDurable) readable before its batch is durable.
//
// At most two batches are applied but unacknowledged: the one the syncer
// waits for and the one the writer has ready to hand over (the hand-off
// channel is unbuffered). Pebble syncs its WAL in order, so the batches
// become durable in revision order, and the syncer finishes them in that
// order: revisions are acknowledged strictly increasing and without gaps.
func (s *Store) runWriter() {
	defer s.wg.Done()
	staged := make(chan *stagedBatch)
	syncerDone := make(chan struct{})
	go s.runSyncer(staged, syncerDone)
	defer func() {
		// Batches already applied finish and are acknowledged.
		close(staged)
		<-syncerDone
	}()
	for {
		var first *writeOp
		select {
		case first = <-s.ops:
		case <-s.closing:
			return
		}
		batch := make([]*writeOp, 1, min(s.opts.MaxBatchOps, 64))
		batch[0] = first
		size := len(first.value)
	drain:
		for len(batch) < s.opts.MaxBatchOps && size < s.opts.MaxBatchBytes {
			select {
			case op := <-s.ops:
				batch = append(batch, op)
				size += len(op.value)
			default:
				break drain
			}
		}
		staged <- s.stage(batch)
	}
}

// stagedBatch is a batch the writer has applied to Pebble (so it is visible
// to Pebble readers) whose WAL fsync may still be running.
type stagedBatch struct {
	b        *pebble.Batch
	ops      []*writeOp
	results  []writeResult
	events   []storage.Event
	applied  []int // indexes into ops of applied writes
	from, to int64 // revisions from..to, when applied is not empty
	err      error // the apply failed: the fsync is not to be waited for
}

// stage checks and applies ops as one batch and hands it to Pebble without
// waiting for its fsync. Only the writer calls it.
func (s *Store) stage(ops []*writeOp) *stagedBatch {
	sb := &stagedBatch{
		ops:     ops,
		results: make([]writeResult, len(ops)),
		events:  make([]storage.Event, 0, len(ops)),
		applied: make([]int, 0, len(ops)),
	}
	b := s.db.NewIndexedBatch()
	sb.b = b
	clear(s.pending)
	base := s.staged
	next := base
	for i, op := range ops {
		if p := s.writeErr.Load(); p != nil {
			sb.results[i].err = fmt.Errorf("embedded: write to %q refused, store is read-only after a failed write: %w", op.key, *p)
			continue
		}
		if err := op.ctx.Err(); err != nil {
			sb.results[i].err = err
			continue
		}
		ev, prev, err := s.apply(b, op, next+1)
		if err != nil {
			sb.results[i].err = err
			continue
		}
		next++
		sb.results[i] = writeResult{rev: next, prev: prev}
		sb.events = append(sb.events, ev)
		sb.applied = append(sb.applied, i)
	}
	if len(sb.applied) == 0 {
		return sb
	}
	sb.from, sb.to = base+1, next
	s.staged = next
	err := b.Set([]byte(metaCurrentKey), encodeMeta(metaCurrentKey, next), nil)
	if err == nil {
		err = s.applyNoSyncWait(b)
	}
	if err != nil {
		// The pipeline is unusable (see applyNoSyncWait): refuse further
		// writes now, before staging another batch on it.
		sb.err = s.commitFailed(sb, err)
		return sb
	}
	// Only now, with the batch in Pebble, do readers of the index see it
	// (keyIndex); and before the syncer can acknowledge it, so the index
	// is never behind an acknowledged write.
	s.index.mu.Lock()
	for key, p := range s.pending {
		if p.deleted {
			s.index.del(key)
		} else {
			s.index.set(key, p.keyMeta)
		}
	}
	s.index.rev = next
	s.index.mu.Unlock()
	return sb
}

// pendingKey is a change to the key index made by the batch being staged.
type pendingKey struct {
	keyMeta
	deleted bool
}

// lookup returns key's entry in the key index as the batch being staged
// has left it. Only the writer calls it (and reads the index without its
// lock: no one else changes it).
func (s *Store) lookup(key string) (keyMeta, bool) {
	if p, ok := s.pending[key]; ok {
		return p.keyMeta, !p.deleted
	}
	return s.index.get(key)
}

// runSyncer finishes the writer's batches in order until staged is closed.
func (s *Store) runSyncer(staged <-chan *stagedBatch, done chan<- struct{}) {
	defer close(done)
	var failed error // once a batch fails, every later one fails too
	for sb := range staged {
		if len(sb.applied) > 0 {
			err := sb.err
			if err == nil {
				if err = sb.b.SyncWait(); err != nil {
					err = s.commitFailed(sb, err)
				}
			}
			if err == nil && failed != nil {
				// Its revisions follow a batch whose fate is unknown.
				err = failed
			}
			if err != nil {
				failed = err
				for _, i := range sb.applied {
					sb.results[i] = writeResult{err: err}
				}
			} else {
				s.hub.publish(sb.events)
				s.advance(sb.to)
				if sb.to >= s.checkpointAt.Load() {
					select {
					case s.checkpointWake <- struct{}{}:
					default:
					}
				}
			}
		}
		_ = sb.b.Close()
		for i, op := range sb.ops {
			op.done <- sb.results[i]
		}
	}
}

// commitFailed turns the store read-only after Pebble failed to commit sb
// and returns the error its writes get. Pebble's WAL errors are sticky and
// whether the batch reached disk is unknown, so every later write is refused
// too: the store stays readable and the operator restarts it (reopen
// recovers exactly what the WAL holds).
func (s *Store) commitFailed(sb *stagedBatch, err error) error {
	return s.turnReadOnly(fmt.Errorf("embedded: committing revisions %d..%d: %w", sb.from, sb.to, err))
}

// turnReadOnly records the first failed commit, after which Pebble's commit
// pipeline cannot be trusted: writes and compactions are refused and Health
// fails. It returns err.
func (s *Store) turnReadOnly(err error) error {
	if s.writeErr.CompareAndSwap(nil, &err) {
		s.opts.Logger.Error("embedded store commit failed; store is now read-only", "err", err)
	}
	return err
}

// apply checks op's precondition against the key index and the batch's
// earlier ops, and stages it at revision rev: the write's key-log and
// history records, and for updates and deletes a retire record naming the
// history the write made obsolete (compaction deletes it, see
// Store.Compact).
func (s *Store) apply(b *pebble.Batch, op *writeOp, rev int64) (storage.Event, storage.KeyValue, error) {
	meta, exists := s.lookup(op.key)
	// readCur reads the current value through the indexed batch (which
	// holds this batch's earlier ops); only conflicts, deletes and updates
	// without a usable peek need it.
	readCur := func() (storage.KeyValue, error) {
		return readValue(b, op.key, meta.mod, meta.create)
	}
	var (
		ev  storage.Event
		cur storage.KeyValue
	)
	switch op.kind {
	case opCreate:
		if exists {
			return ev, storage.KeyValue{}, fmt.Errorf("embedded: create %q: exists at revision %d: %w", op.key, meta.mod, storage.ErrExists)
		}
		ev = storage.Event{Type: storage.EventPut, Key: op.key, Value: op.value, Revision: rev, CreateRevision: rev}
	case opUpdate, opDelete:
		verb := "update"
		if op.kind == opDelete {
			verb = "delete"
		}
		if !exists {
			return ev, storage.KeyValue{}, fmt.Errorf("embedded: %s %q: %w", verb, op.key, storage.ErrNotFound)
		}
		// Only Delete treats 0 as "unconditional"; for Update it is a
		// revision no key has, hence a conflict.
		if (op.kind == opUpdate || op.expected != 0) && meta.mod != op.expected {
			cur, err := readCur()
			if err != nil {
				return ev, storage.KeyValue{}, err
			}
			return ev, storage.KeyValue{}, fmt.Errorf("embedded: %s: %w", verb, &storage.ConflictError{Key: op.key, Expected: op.expected, Current: cur})
		}
		if op.kind == opUpdate && op.peeked && op.peek.ModRevision == meta.mod {
			cur = op.peek
		} else {
			// Delete returns the old value; an Update without a usable
			// peek (the key changed since) reads it for PrevValue.
			var err error
			cur, err = readCur()
			if op.kind == opUpdate && errors.Is(err, storage.ErrCorrupt) {
				// Updating a damaged value is how it is repaired: the
				// event goes out with its previous value unknown (nil,
				// and PrevModRevision 0, as storage.Event allows), and
				// its history record names no previous revision.
				cur, err = storage.KeyValue{}, nil
			}
			if err != nil {
				return ev, storage.KeyValue{}, err
			}
		}
		// cur.Value is a fresh copy (decodeCurrent). An Update's is the
		// event's alone; a Delete also returns it to its caller, who owns
		// it, so the event gets its own copy.
		ev = storage.Event{Type: storage.EventPut, Key: op.key, Revision: rev, CreateRevision: meta.create, PrevValue: cur.Value, PrevModRevision: cur.ModRevision}
		var flags byte
		if op.kind == opDelete {
			ev.Type = storage.EventDelete
			ev.PrevValue = append([]byte{}, cur.Value...)
			flags = retireSelf
		}
		if err := b.Set(retireKey(rev), encodeRetire(rev, meta.mod, flags), nil); err != nil {
			return ev, storage.KeyValue{}, err
		}
	}
	if ev.Type == storage.EventPut {
		// The caller may reuse its slice once we return, and the event
		// (shared with watchers) must not change under them: copy once,
		// here.
		ev.Value = append([]byte{}, op.value...)
	}
	rec := setDeferred(b, keyLogKey(rev), keyLogLen(op.key))
	putKeyLog(rec.Value, rev, ev.Type, ev.CreateRevision, op.key)
	if err := rec.Finish(); err != nil {
		return ev, storage.KeyValue{}, err
	}
	rec = setDeferred(b, historyKey(rev), historyLen(ev))
	putHistory(rec.Value, ev)
	if err := rec.Finish(); err != nil {
		return ev, storage.KeyValue{}, err
	}
	// Later ops in this batch see this one; the index itself changes once
	// the batch is applied (stage).
	s.pending[op.key] = pendingKey{keyMeta: keyMeta{mod: rev, create: ev.CreateRevision}, deleted: ev.Type == storage.EventDelete}
	if op.kind == opUpdate {
		cur = storage.KeyValue{} // only Delete returns the old value
	}
	return ev, cur, nil
}

// setDeferred adds a record of n bytes under key to b and returns it for
// the caller to fill in place and Finish: records are encoded straight into
// the batch rather than built in a buffer of their own and copied (an
// object's value is most of its history record).
func setDeferred(b *pebble.Batch, key []byte, n int) *pebble.DeferredBatchOp {
	rec := b.SetDeferred(len(key), n)
	copy(rec.Key, key)
	return rec
}

// applyNoSyncWait applies b to Pebble (it is then visible to Pebble readers)
// and requests its WAL fsync without waiting for it; b.SyncWait waits and
// reports a failed write or sync. Pebble treats an error before that (writing
// the WAL or applying the memtable) as fatal and calls Logger.Fatalf from
// inside the apply; pebbleLogger panics with pebbleFatal and this turns it
// back into an error. Pebble has already released its commit pipeline's
// locks by then, so reads keep working; the writer refuses further writes.
func (s *Store) applyNoSyncWait(b *pebble.Batch) (err error) {
	defer recoverFatal(&err)
	return s.db.ApplyNoSyncWait(b, pebble.Sync)
}

// applyUnsynced applies b without asking for an fsync (the writer's next
// commit syncs the WAL up to it), turning a Pebble fatal error into an
// error as applyNoSyncWait does.
func (s *Store) applyUnsynced(b *pebble.Batch) (err error) {
	defer recoverFatal(&err)
	return s.db.Apply(b, pebble.NoSync)
}

// recoverFatal, deferred, turns a pebbleFatal panic into *err.
func recoverFatal(err *error) {
	if r := recover(); r != nil {
		f, ok := r.(pebbleFatal)
		if !ok {
			panic(r)
		}
		*err = f
	}
}

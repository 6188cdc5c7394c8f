package embedded

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Checkpoints bound the key log. Open rebuilds the key index from the
// latest checkpoint plus the key-log records after it; the checkpoint is
// the index written out whole, one record per key, under a prefix of its
// own revision:
//
//	"c" + bigendian(C) + key -> crc32c(4) | modRev(8) | createRev(8)
//	"m/checkpoint"           -> crc32c(4) | C(8)
//
// Why not delete each obsolete key-log record when compaction deletes its
// history: those deletions land all over the log's range (an update's
// previous write may be anywhere in the past), and each round of them made
// the next L0 compaction rewrite the whole log (~80 bytes per object),
// which at a million objects raised updates' p99 by ~40% (docs/bench/storage.md,
// "Key log"). A checkpoint instead writes keys that overlap nothing older
// (the prefix is new) and drops the old checkpoint and the log it covers
// with range deletions, which Pebble applies by dropping whole files.
//
// The checkpoint is written while writes go on, from the live index in
// pieces (each under the index's read lock), so it is fuzzy: a key written
// after C may be recorded at any of its states since. That is harmless,
// because the key-log records after C stay, and replaying them after the
// checkpoint ends every such key at its last write.
const checkpointPrefix = 'c'

const metaCheckpointKey = "m/checkpoint"

// checkpointSlots is how many key-table slots one piece of a checkpoint
// reads under the index's read lock, and how many records it writes
// between looks at its context.
const checkpointSlots = 4096

func checkpointKey(rev int64, key []byte) []byte {
	b := make([]byte, 9+len(key))
	b[0] = checkpointPrefix
	binary.BigEndian.PutUint64(b[1:], uint64(rev))
	copy(b[9:], key)
	return b
}

// checkpointRecord encodes key's record in the checkpoint at revision rev.
func checkpointRecord(rev int64, key []byte, m keyMeta) (dbKey, rec []byte) {
	dbKey = checkpointKey(rev, key)
	return dbKey, encodeCheckpoint(dbKey, m)
}

// checkpointKeysDivisor: the key log may hold one write per this many
// live keys before a checkpoint is due. Open replays the log at ~1 µs a
// record (a restart waits for it: 1.98 million records after a million
// keys' checkpoint took 1.9 s of the open; docs/bench/storage.md,
// History 2026-11-27), while a checkpoint of a million keys costs ~1.7 s
// of CPU over ~12 s (paced in short slices, slicePacer): every half a
// million writes at a million keys, that is still under 0.5 % of a core
// at 10,000 nodes' heartbeats, for a replay of at most ~0.5 s.
const checkpointKeysDivisor = 2

// checkpointDue reports whether the key log has grown past
// Options.CheckpointWrites records, or past the number of live keys over
// checkpointKeysDivisor if that is larger, since the last checkpoint.
func (s *Store) checkpointDue() bool {
	s.index.mu.RLock()
	last, live := s.checkpointRev.Load(), s.index.Len()
	rev := s.index.rev
	s.index.mu.RUnlock()
	due := last + int64(max(live/checkpointKeysDivisor, s.opts.CheckpointWrites))
	// The syncer need not wake us before then (the key count may have
	// grown by then: we look again).
	s.checkpointAt.Store(due)
	return rev >= due
}

// runCheckpoints writes a checkpoint whenever the syncer signals one may be
// due and it is, until the store closes.
func (s *Store) runCheckpoints() {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.closing
		cancel()
	}()
	for {
		select {
		case <-s.closing:
			return
		case <-s.checkpointWake:
		}
		if !s.checkpointDue() {
			continue
		}
		if err := s.read(ctx, func() error { return s.checkpoint(ctx) }); err != nil && ctx.Err() == nil {
			s.opts.Logger.Error("embedded store: writing a key-index checkpoint failed; the key log keeps growing until one succeeds", "err", err)
		}
	}
}

// checkpoint writes the key index out as a checkpoint at the index's
// current revision C, then, in one fsync'd batch, records it and deletes
// the previous checkpoint and the key log up to C. The caller holds the
// Pebble read guard (Store.read).
func (s *Store) checkpoint(ctx context.Context) error {
	// One at a time: each deletes the checkpoints before its own.
	s.checkpointMu.Lock()
	defer s.checkpointMu.Unlock()
	s.index.mu.RLock()
	rev := s.index.rev
	if rev <= s.checkpointRev.Load() {
		s.index.mu.RUnlock()
		return nil
	}
	groups := make([]*keyTable, 0, len(s.index.groups))
	for _, t := range s.index.groups {
		groups = append(groups, t)
	}
	s.index.mu.RUnlock()

	pace := newSlicePacer(s.opts.CompactionYield)
	runs, err := s.collectIndex(ctx, groups, pace)
	if err != nil {
		return err
	}
	if len(runs) > 0 {
		if err := s.ingestCheckpoint(ctx, rev, runs, pace); err != nil {
			return fmt.Errorf("embedded: checkpoint at revision %d: %w", rev, err)
		}
	}
	b := s.db.NewBatch()
	defer b.Close()
	// The checkpoint may hold writes the syncer has not yet acknowledged:
	// it becomes the checkpoint with this batch, after theirs in the WAL,
	// so they are durable first, and if their commit failed, so does this.
	if err := b.DeleteRange([]byte{checkpointPrefix}, checkpointKey(rev, nil), nil); err != nil {
		return err
	}
	if err := b.DeleteRange([]byte{keyLogPrefix}, keyLogKey(rev+1), nil); err != nil {
		return err
	}
	if err := b.Set([]byte(metaCheckpointKey), encodeMeta(metaCheckpointKey, rev), nil); err != nil {
		return err
	}
	if err := s.commitSynced(b); err != nil {
		return fmt.Errorf("embedded: checkpoint at revision %d: %w", rev, err)
	}
	s.checkpointRev.Store(rev)
	return nil
}

// loadCheckpoint reads the checkpoint at revision rev into x. A damaged
// record's key is recovered from history (recoverKeys).
func loadCheckpoint(r pebble.Reader, x *keyIndex, rev int64, log *slog.Logger) error {
	damaged := map[string]bool{}
	lower := checkpointKey(rev, nil)
	upper := checkpointKey(rev+1, nil)
	err := scanRecords(r, lower, upper, func(dbKey, rec []byte) error {
		key := dbKey[9:]
		m, ok := decodeCheckpoint(dbKey, rec)
		if !ok {
			log.Error("embedded store: a damaged key-index checkpoint record; reading history for its key", "key", string(key), "checkpoint", rev)
			damaged[string(key)] = true
			return nil
		}
		x.setBytes(key, m)
		return nil
	})
	if err != nil || len(damaged) == 0 {
		return err
	}
	found, err := recoverKeys(r, damaged, log)
	for key, m := range found {
		x.set(key, m)
	}
	return err
}

// replacements reads the retire records: for each write a later one
// replaced and compaction has not yet deleted, the revision of the write
// that replaced it, negated if that was a delete. Damaged retire records
// are skipped.
func replacements(r pebble.Reader) (map[int64]int64, error) {
	next := map[int64]int64{}
	err := scanRecords(r, []byte{retirePrefix}, []byte{retirePrefix + 1}, func(dbKey, rec []byte) error {
		if rev, prev, flags, err := decodeRetire(dbKey, rec); err == nil {
			next[prev] = rev
			if flags&retireSelf != 0 {
				next[prev] = -rev
			}
		}
		return nil
	})
	return next, err
}

// recoverKeys finds the current write of each damaged key by reading all of
// history (so only when a record naming it is damaged): the key's last
// intact write there, followed through retire records past later writes
// whose history records are damaged too. It returns the keys that are live,
// with the revision holding their value (whose record may be the damaged
// one: reads of the key then report it). A key with no intact history is
// logged and left out.
func recoverKeys(r pebble.Reader, damaged map[string]bool, log *slog.Logger) (map[string]keyMeta, error) {
	last := map[string]storage.Event{}
	err := scanRecords(r, []byte{historyPrefix}, []byte{historyPrefix + 1}, func(dbKey, rec []byte) error {
		ev, err := decodeHistoryFor(dbKey, rec, "\xff") // keys start with '/': no values copied
		if err == nil && damaged[ev.Key] {
			last[ev.Key] = ev
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	next, err := replacements(r)
	if err != nil {
		return nil, err
	}
	live := map[string]keyMeta{}
	for key := range damaged {
		ev, ok := last[key]
		if !ok {
			log.Error("embedded store: no intact history of a key whose index record is damaged; the key is lost", "key", key)
			continue
		}
		for ev.Type == storage.EventPut && next[ev.Revision] != 0 {
			if n := next[ev.Revision]; n < 0 {
				ev.Type = storage.EventDelete
			} else {
				ev.Revision = n
			}
		}
		if ev.Type == storage.EventPut {
			live[key] = keyMeta{mod: ev.Revision, create: ev.CreateRevision}
		}
	}
	return live, nil
}

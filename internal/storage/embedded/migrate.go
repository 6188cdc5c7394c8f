package embedded

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Store formats, recorded in m/format. Open upgrades an older store in
// place before serving it; each step ends by writing its format number in
// an fsync'd batch, so a crash midway repeats the step on the next Open.
//
// A binary older than format 2 does not check the format and would find no
// values in a newer store; one of format 2 refuses a format-3 store.
// Downgrading is not supported.
const (
	metaFormatKey = "m/format"
	// formatKeyIndexed: the "i" index records exist.
	formatKeyIndexed = 1
	// formatHistoryValues: values live only in history (no "k" latest
	// records), and updates and deletes have retire records.
	formatHistoryValues = 2
	// formatKeyLog: the key index lives in memory, persisted as key-log
	// records and checkpoints (checkpoint.go) instead of "i" index
	// records.
	formatKeyLog  = 3
	formatCurrent = formatKeyLog
)

// migrateChunk is how many bytes of records an upgrade step commits at a
// time (without waiting for the fsync: the step's final batch is synced,
// and the WAL is ordered).
const migrateChunk = 4 << 20

// upgradeFormat brings the store in db, at revision rev, to formatCurrent.
func upgradeFormat(db *pebble.DB, rev int64, log *slog.Logger) error {
	format, err := readMeta(db, metaFormatKey)
	if err != nil {
		return err
	}
	if format > formatCurrent {
		return fmt.Errorf("embedded: the store is in format %d, newer than this version's %d", format, formatCurrent)
	}
	if format < formatKeyIndexed {
		if err := buildKeyIndex(db); err != nil {
			return fmt.Errorf("embedded: building the key index at revision %d: %w", rev, err)
		}
	}
	if format < formatHistoryValues {
		if err := moveValuesToHistory(db, rev, log); err != nil {
			return fmt.Errorf("embedded: moving values into history at revision %d: %w", rev, err)
		}
	}
	if format < formatKeyLog {
		if err := checkpointIndex(db, rev, log); err != nil {
			return fmt.Errorf("embedded: checkpointing the key index at revision %d: %w", rev, err)
		}
	}
	return nil
}

// chunkedBatch commits a long series of writes in migrateChunk pieces.
type chunkedBatch struct {
	db *pebble.DB
	b  *pebble.Batch
	// apply commits a piece without waiting for its fsync.
	apply func(b *pebble.Batch) error
}

func newChunkedBatch(db *pebble.DB) *chunkedBatch {
	return &chunkedBatch{db: db, b: db.NewBatch(), apply: func(b *pebble.Batch) (err error) {
		defer recoverFatal(&err)
		return b.Commit(pebble.NoSync)
	}}
}

func (c *chunkedBatch) set(key, value []byte) error {
	if err := c.b.Set(key, value, nil); err != nil {
		return err
	}
	if c.b.Len() < migrateChunk {
		return nil
	}
	return c.commit()
}

// commit commits what is batched so far, so that reads see it.
func (c *chunkedBatch) commit() error {
	if err := c.apply(c.b); err != nil {
		return err
	}
	c.b.Close()
	c.b = c.db.NewBatch()
	return nil
}

// finish records format in the last batch and commits it with an fsync.
func (c *chunkedBatch) finish(format int64) (err error) {
	defer c.b.Close()
	if err := c.b.Set([]byte(metaFormatKey), encodeMeta(metaFormatKey, format), nil); err != nil {
		return err
	}
	defer recoverFatal(&err)
	return c.b.Commit(pebble.Sync)
}

// buildKeyIndex upgrades a format-0 store: it writes an index record for
// every latest record. A damaged latest record gets none; the next step
// reports it.
func buildKeyIndex(db *pebble.DB) error {
	c := newChunkedBatch(db)
	err := scanRecords(db, []byte{latestPrefix}, []byte{latestPrefix + 1}, func(dbKey, rec []byte) error {
		m, ok := decodeRevisions(dbKey, rec)
		if !ok {
			return nil
		}
		ik := indexKey(string(dbKey[1:]))
		return c.set(ik, encodeLatest(ik, m.mod, m.create, nil))
	})
	if err != nil {
		c.b.Close()
		return err
	}
	return c.finish(formatKeyIndexed)
}

func indexKey(key string) []byte {
	b := make([]byte, 1+len(key))
	b[0] = indexPrefix
	copy(b[1:], key)
	return b
}

// decodeIndex validates and decodes key's index record, stored under ik:
// the key and its revisions, no value.
func decodeIndex(key string, ik, rec []byte) (storage.KeyValue, error) {
	if len(rec) != latestHeader {
		return storage.KeyValue{}, fmt.Errorf("embedded: index record for key %q is %d bytes, want %d: %w", key, len(rec), latestHeader, storage.ErrCorrupt)
	}
	kv, err := decodeLatest(key, ik, rec)
	kv.Value = nil
	return kv, err
}

// checkpointIndex upgrades a format-2 store, at revision rev: its index
// records become the key index's first checkpoint (checkpoint.go), at rev,
// and go. A damaged index record's key is recovered from history
// (recoverKeys).
func checkpointIndex(db *pebble.DB, rev int64, log *slog.Logger) error {
	c := newChunkedBatch(db)
	damaged := map[string]bool{}
	put := func(key string, m keyMeta) error {
		return c.set(checkpointRecord(rev, []byte(key), m))
	}
	err := scanRecords(db, []byte{indexPrefix}, []byte{indexPrefix + 1}, func(dbKey, rec []byte) error {
		kv, err := decodeIndex(string(dbKey[1:]), dbKey, rec)
		if err != nil {
			log.Error("embedded store: a damaged index record while upgrading the store format; reading history for its key", "err", err)
			damaged[kv.Key] = true
			return nil
		}
		return put(kv.Key, keyMeta{mod: kv.ModRevision, create: kv.CreateRevision})
	})
	if err == nil && len(damaged) > 0 {
		var live map[string]keyMeta
		live, err = recoverKeys(db, damaged, log)
		for key, m := range live {
			if err == nil {
				err = put(key, m)
			}
		}
	}
	if err == nil {
		err = c.b.DeleteRange([]byte{indexPrefix}, []byte{indexPrefix + 1}, nil)
	}
	if err == nil {
		err = c.b.Set([]byte(metaCheckpointKey), encodeMeta(metaCheckpointKey, rev), nil)
	}
	if err != nil {
		c.b.Close()
		return err
	}
	return c.finish(formatKeyLog)
}

// moveValuesToHistory upgrades a format-1 store, whose values were kept
// twice (in a latest record per key and in history) and whose compactions
// deleted all history at or below the compacted revision:
//   - a key whose latest write is at or below the compacted revision gets
//     that write's history record back, from its latest record;
//   - every update and delete above it gets its retire record, naming the
//     key's previous write (found by scanning that history in order; the
//     first write of a key there names it itself if it recorded its previous
//     value, and otherwise that write is gone already);
//   - the latest records are deleted.
//
// A damaged latest record is skipped (logged): reads of its key then report
// the missing history record as corruption, naming the key and revision. A
// damaged history record of a live key's latest write is rewritten from its
// intact latest record (as a put without its previous value). The scan of
// history keeps every key written above the compacted revision in memory
// (~100 bytes each) for the length of the upgrade.
func moveValuesToHistory(db *pebble.DB, rev int64, log *slog.Logger) error {
	comp, err := readMeta(db, metaCompactedKey)
	if err != nil {
		return err
	}
	c := newChunkedBatch(db)
	err = scanRecords(db, []byte{latestPrefix}, []byte{latestPrefix + 1}, func(dbKey, rec []byte) error {
		kv, err := decodeLatest(string(dbKey[1:]), dbKey, rec)
		if err != nil {
			log.Error("embedded store: skipping a damaged latest record while upgrading the store format", "err", err)
			return nil
		}
		if kv.ModRevision > comp {
			// Its history record should be there, but format 1 served
			// reads from the latest record, so damage to the history
			// record went unseen: check it before the latest record goes.
			_, err := readValue(db, kv.Key, kv.ModRevision, kv.CreateRevision)
			if err == nil {
				return nil
			}
			if !errors.Is(err, storage.ErrCorrupt) {
				return err
			}
			log.Error("embedded store: rewriting a damaged history record from the intact latest record while upgrading the store format", "err", err)
		}
		ev := storage.Event{Type: storage.EventPut, Key: kv.Key, Value: kv.Value, Revision: kv.ModRevision, CreateRevision: kv.CreateRevision}
		return c.set(historyKey(ev.Revision), encodeHistory(ev))
	})
	if err == nil {
		err = c.commit() // the scan below reads the history records rewritten above
	}
	if err == nil {
		last := make(map[string]int64)
		err = scanRecords(db, historyKey(comp+1), historyKey(rev+1), func(dbKey, rec []byte) error {
			ev, _, err := decodeHistoryFor(dbKey, rec, "\xff") // keys start with '/': no values copied
			if err != nil {
				log.Error("embedded store: skipping a damaged history record while upgrading the store format", "err", err)
				return nil
			}
			prev, ok := last[ev.Key]
			if !ok {
				prev = ev.PrevModRevision
			}
			var flags byte
			if ev.Type == storage.EventDelete {
				flags = retireSelf
				delete(last, ev.Key)
				if prev == 0 {
					// Its previous write is compacted already; a retire
					// record must name one, and this key's creation is
					// as gone.
					prev = ev.CreateRevision
				}
			} else {
				last[ev.Key] = ev.Revision
			}
			if prev == 0 || prev >= ev.Revision {
				return nil // a create, or the previous write is gone
			}
			return c.set(retireKey(ev.Revision), encodeRetire(ev.Revision, prev, flags))
		})
	}
	if err == nil {
		err = c.b.DeleteRange([]byte{latestPrefix}, []byte{latestPrefix + 1}, nil)
	}
	if err != nil {
		c.b.Close()
		return err
	}
	return c.finish(formatHistoryValues)
}

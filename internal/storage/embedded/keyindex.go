package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// keyMeta is the in-memory record of one live key: the revision holding its
// value and the revision that created it.
type keyMeta struct {
	mod, create int64
}

// keyIndex is the store's only index from keys to revisions: key -> keyMeta
// for every live key, in memory. The writer checks preconditions against it
// without reading Pebble; Get and List look keys up in it, then read their
// values from history.
//
// Why in memory only: a persisted index record per key (format 2) was a
// write to a hashed key on every update, and at a million objects the L0
// compactions rewriting those records were the main cost left under write
// latency (docs/bench/storage.md). What is persisted instead is the key-log
// record of each write (codec.go), keyed by revision, so it is written in
// order like history, and from time to time the whole index, as a
// checkpoint (checkpoint.go); Open reads the checkpoint and replays the
// key log after it. etcd
// keeps the same kind of in-memory index (mvcc's treeIndex) and rebuilds it
// from its revision-keyed store at start.
//
// Keys are grouped by resource (groupOf), one keyTable per group: a List
// of one resource's prefix scans that resource's keys, not every key, and
// sorts what matches. The tables hold their keys without a Go pointer per
// key (keytable.go), ~100 bytes per key.
//
// The writer is the only goroutine that changes the index, under mu, and
// only after the batch that made the change is applied to Pebble, so a
// reader holding mu.RLock sees the index at revision rev with every value
// it names in Pebble. The writer reads it without the lock.
type keyIndex struct {
	mu sync.RWMutex
	// rev is the revision of the last write the index reflects, applied
	// to Pebble but possibly not yet durable (see Store.awaitDurable).
	rev    int64
	groups map[string]*keyTable
}

func newKeyIndex() *keyIndex {
	return &keyIndex{groups: map[string]*keyTable{}}
}

// groupOf returns the group key belongs to: its first three path segments
// ("/registry/pods/" of "/registry/pods/ns/name"), or "" for a key with
// fewer.
func groupOf(key string) string {
	n := 0
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			if n++; n == 3 {
				return key[:i+1]
			}
		}
	}
	return ""
}

func (x *keyIndex) get(key string) (keyMeta, bool) {
	t := x.groups[groupOf(key)]
	if t == nil {
		return keyMeta{}, false
	}
	return t.Get(key)
}

// set and del change the index; only the writer calls them, holding mu.
func (x *keyIndex) set(key string, m keyMeta) {
	x.setBytes(unsafe.Slice(unsafe.StringData(key), len(key)), m)
}

// setBytes is set for a key in a buffer the caller reuses.
func (x *keyIndex) setBytes(key []byte, m keyMeta) {
	g := groupOf(unsafe.String(unsafe.SliceData(key), len(key)))
	t := x.groups[g]
	if t == nil {
		t = newKeyTable()
		x.groups[strings.Clone(g)] = t
	}
	t.setBytes(key, m)
}

func (x *keyIndex) del(key string) {
	if t := x.groups[groupOf(key)]; t != nil {
		t.Delete(key)
	}
}

// Len is the number of keys.
func (x *keyIndex) Len() int {
	n := 0
	for _, t := range x.groups {
		n += t.Len()
	}
	return n
}

// list returns the key and revisions of every key with prefix (values
// unset), in no particular order. The caller holds mu (for reading).
func (x *keyIndex) list(prefix string) []storage.KeyValue {
	var out []storage.KeyValue
	g := groupOf(prefix)
	for name, t := range x.groups {
		// A prefix of three segments or more names one group; a shorter
		// one may match keys of every group it is a prefix of, and keys
		// without a group.
		if g != "" && name != g || g == "" && name != "" && !strings.HasPrefix(name, prefix) {
			continue
		}
		t.each(func(key []byte, m keyMeta) {
			if len(key) >= len(prefix) && string(key[:len(prefix)]) == prefix {
				out = append(out, storage.KeyValue{Key: string(key), ModRevision: m.mod, CreateRevision: m.create})
			}
		})
	}
	return out
}

// sortByKey sorts kvs into key order, the order List returns.
func sortByKey(kvs []storage.KeyValue) {
	slices.SortFunc(kvs, func(a, b storage.KeyValue) int { return strings.Compare(a.Key, b.Key) })
}

// loadKeyIndex rebuilds the key index at revision rev from the checkpoint
// at revision checkpoint (0: none; checkpoint.go), then by replaying the
// key log after it: every key-log record in revision order, a later write
// of a key replacing an earlier one.
//
// A damaged key-log record is read from its history record instead, which
// holds the same key, type and creation revision. If compaction has
// deleted that history record, the write was replaced or was a delete:
// every key whose current write's history is gone is then dropped
// (dropStale). If the history record is damaged too, the write is skipped
// when a retire record says a later write replaced it (the later write's
// own key-log record says where the key went); otherwise Open fails,
// naming the revision: serving the store without that write could show a
// deleted key or an old value.
func loadKeyIndex(r pebble.Reader, rev, compacted, checkpoint int64, log *slog.Logger) (*keyIndex, error) {
	x := newKeyIndex()
	x.rev = rev
	if checkpoint > 0 {
		if err := loadCheckpoint(r, x, checkpoint, log); err != nil {
			return nil, fmt.Errorf("embedded: loading the key index checkpoint at revision %d: %w", checkpoint, err)
		}
	}
	var lost []int64
	retired := false
	err := scanRecords(r, keyLogKey(checkpoint+1), []byte{keyLogPrefix + 1}, func(dbKey, rec []byte) error {
		e, err := decodeKeyLog(dbKey, rec)
		if err != nil {
			var herr error
			if e, herr = keyLogFromHistory(r, e.rev); errors.Is(herr, errNoHistory) && e.rev <= compacted {
				// Compaction deleted its history: a later write replaced
				// it, or it was a delete (dropStale).
				log.Warn("embedded store: a damaged key-log record of a compacted write", "err", err)
				retired = true
				return nil
			} else if herr != nil {
				lost = append(lost, e.rev)
				log.Error("embedded store: a write's key-log record and history record are both damaged", "revision", e.rev, "keyLogErr", err, "historyErr", herr)
				return nil
			}
			log.Warn("embedded store: a key-log record is damaged; using its history record", "err", err)
		}
		// The tables copy key bytes (keyTable.setBytes): no string per
		// record of a scan over a million.
		key := unsafe.String(unsafe.SliceData(e.key), len(e.key))
		if e.typ == storage.EventPut {
			x.setBytes(e.key, keyMeta{mod: e.rev, create: e.create})
		} else {
			x.del(key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: loading the key index: %w", err)
	}
	if len(lost) > 0 {
		if err := checkReplaced(r, lost); err != nil {
			return nil, err
		}
	}
	if retired {
		if err := dropStale(r, x); err != nil {
			return nil, fmt.Errorf("embedded: loading the key index: %w", err)
		}
	}
	return x, nil
}

// dropStale removes from x every key whose history record is gone. Only
// compaction deletes history, and never a live key's current write: such
// a key was deleted by a write whose key-log record is damaged. It reads
// one record per key, so Open calls it only in that case.
func dropStale(r pebble.Reader, x *keyIndex) error {
	var stale []string
	var err error
	for _, t := range x.groups {
		t.each(func(key []byte, m keyMeta) {
			if err != nil {
				return
			}
			_, closer, gerr := r.Get(historyKey(m.mod))
			switch {
			case errors.Is(gerr, pebble.ErrNotFound):
				stale = append(stale, string(key))
			case gerr != nil:
				err = gerr
			default:
				closer.Close()
			}
		})
	}
	for _, key := range stale {
		x.del(key)
	}
	return err
}

// errNoHistory: the history record is not there (compaction deleted it).
var errNoHistory = fmt.Errorf("embedded: the history record is gone: %w", storage.ErrCorrupt)

// keyLogFromHistory rebuilds the key-log entry of the write at rev from its
// history record.
func keyLogFromHistory(r pebble.Reader, rev int64) (keyLogEntry, error) {
	hk := historyKey(rev)
	v, closer, err := r.Get(hk)
	if errors.Is(err, pebble.ErrNotFound) {
		return keyLogEntry{rev: rev}, errNoHistory
	}
	if err != nil {
		return keyLogEntry{rev: rev}, err
	}
	defer closer.Close()
	ev, err := decodeHistoryFor(hk, v, "\xff") // keys start with '/': no values copied
	if err != nil {
		return keyLogEntry{rev: rev}, err
	}
	return keyLogEntry{rev: rev, create: ev.CreateRevision, typ: ev.Type, key: []byte(ev.Key)}, nil
}

// checkReplaced returns nil if a retire record names every revision in
// lost as the write it replaced, and otherwise an ErrCorrupt naming the
// first that none does.
func checkReplaced(r pebble.Reader, lost []int64) error {
	next, err := replacements(r)
	if err != nil {
		return fmt.Errorf("embedded: loading the key index: %w", err)
	}
	for _, rev := range lost {
		if next[rev] == 0 {
			return fmt.Errorf("embedded: the write at revision %d is damaged in both its key-log record and its history record, so its key is unknown: %w", rev, storage.ErrCorrupt)
		}
	}
	return nil
}

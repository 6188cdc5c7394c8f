package embedded

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// keyMeta is the writer's in-memory record of one live key: enough to check
// every precondition (exists, ModRevision, CreateRevision) without reading
// Pebble.
//
// Why: at 1M objects a Create's "is the key absent?" probe walks every LSM
// level (table iterators, index and filter blocks, page-cache preads) and
// cost ~100 µs, serialized in the single writer: 3 ms of a 28-op batch
// against a 1.5 ms fsync, so write latency grew with the data. etcd keeps the
// same kind of in-memory key index (mvcc's treeIndex) for the same reason.
// The cost is memory, roughly 100 bytes per key (keytable.go holds them
// without a GC-visible pointer per key), and a scan of the index records at
// Open.
type keyMeta struct {
	mod, create int64
	// suspect marks a record that failed validation at Open: the writer
	// reads it through Pebble instead, which reports ErrCorrupt.
	suspect bool
}

// The index is persisted as its own small records, "i"+key -> crc32c |
// modRev | createRev (the latest-record format with no value), written in the
// same batch as the latest record, so Open reads ~30 bytes per key instead
// of every value. formatKeyIndexed marks stores that have them.
const (
	indexPrefix      = 'i'
	metaFormatKey    = "m/format"
	formatKeyIndexed = 1
)

func indexKey(key string) []byte {
	b := make([]byte, 1+len(key))
	b[0] = indexPrefix
	copy(b[1:], key)
	return b
}

// loadKeyIndex reads the persisted key index; a store written before the
// index existed gets it built from its latest records and persisted first.
// A corrupt index record marks its key suspect rather than failing Open.
func loadKeyIndex(db *pebble.DB, rev int64) (*keyTable, error) {
	format, err := readMeta(db, metaFormatKey)
	if err != nil {
		return nil, err
	}
	if format < formatKeyIndexed {
		if err := buildKeyIndex(db, rev); err != nil {
			return nil, err
		}
	}
	keys := newKeyTable()
	err = scanHeaders(db, indexPrefix, func(key []byte, m keyMeta) error {
		keys.setBytes(key, m)
		return nil
	})
	return keys, err
}

// scanHeaders calls f for every record under prefix, decoding only the
// revision header.
func scanHeaders(r pebble.Reader, prefix byte, f func(key []byte, m keyMeta) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
	if err != nil {
		return fmt.Errorf("embedded: loading the key index: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("embedded: loading the key index at %q: %w", it.Key()[1:], err)
		}
		var m keyMeta
		if len(v) < latestHeader || checksum(it.Key(), v[4:]) != binary.BigEndian.Uint32(v) {
			m.suspect = true
		} else {
			m.mod = int64(binary.BigEndian.Uint64(v[4:]))
			m.create = int64(binary.BigEndian.Uint64(v[12:]))
		}
		if err := f(it.Key()[1:], m); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("embedded: loading the key index: %w", err)
	}
	return nil
}

// buildKeyIndex writes index records for every latest record, then the
// format marker (so a crash midway simply rebuilds again).
func buildKeyIndex(db *pebble.DB, rev int64) error {
	b := db.NewBatch()
	defer func() { b.Close() }()
	err := scanHeaders(db, latestPrefix, func(key []byte, m keyMeta) error {
		if m.suspect {
			return nil // reads of the key report the corruption
		}
		ik := indexKey(string(key))
		if err := b.Set(ik, encodeLatest(ik, m.mod, m.create, nil), nil); err != nil {
			return err
		}
		if b.Len() < 4<<20 {
			return nil
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			return err
		}
		b.Close()
		b = db.NewBatch()
		return nil
	})
	if err == nil {
		err = b.Set([]byte(metaFormatKey), encodeMeta(metaFormatKey, formatKeyIndexed), nil)
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("embedded: building the key index at revision %d: %w", rev, err)
	}
	return nil
}

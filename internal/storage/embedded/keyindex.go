package embedded

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
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
// modRev | createRev (codec.go), written in the same batch as the key's
// history record, so Open reads ~30 bytes per key instead of every value.
const indexPrefix = 'i'

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

// loadKeyIndex reads the persisted key index (upgradeFormat has made sure
// it exists). A corrupt index record marks its key suspect rather than
// failing Open.
func loadKeyIndex(db *pebble.DB) (*keyTable, error) {
	keys := newKeyTable()
	err := scanHeaders(db, indexPrefix, func(key []byte, m keyMeta) error {
		keys.setBytes(key, m)
		return nil
	})
	return keys, err
}

// scanHeaders calls f for every record under prefix, decoding only the
// revision header.
func scanHeaders(r pebble.Reader, prefix byte, f func(key []byte, m keyMeta) error) error {
	err := scanRecords(r, []byte{prefix}, []byte{prefix + 1}, func(dbKey, v []byte) error {
		var m keyMeta
		if len(v) < latestHeader || checksum(dbKey, v[4:]) != binary.BigEndian.Uint32(v) {
			m.suspect = true
		} else {
			m.mod = int64(binary.BigEndian.Uint64(v[4:]))
			m.create = int64(binary.BigEndian.Uint64(v[12:]))
		}
		return f(dbKey[1:], m)
	})
	if err != nil {
		return fmt.Errorf("embedded: loading the key index: %w", err)
	}
	return nil
}

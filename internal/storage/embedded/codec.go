package embedded

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// On-disk layout (see doc.go for the reasoning):
//
//	"k" + key            -> latest record:  crc32c(4) | modRev(8) | createRev(8) | value
//	"h" + bigendian(rev) -> history record: crc32c(4) | type(1) | createRev(8) | uvarint(len key) | key | value
//	                        with a previous value (type has hasPrevFlag):
//	                        crc32c(4) | type(1) | createRev(8) | uvarint(len key) | key | uvarint(len value) | value |
//	                        prevModRev(8) | prev
//	"i" + key            -> index record:   crc32c(4) | modRev(8) | createRev(8)   (keyindex.go)
//	"m/current"          -> meta record:    crc32c(4) | rev(8)   (revision of the last committed write)
//	"m/compacted"        -> meta record:    crc32c(4) | rev(8)   (history <= rev has been deleted)
//	"m/format"           -> meta record:    crc32c(4) | 1        (the "i" records exist)
//
// Every checksum also covers the pebble key the record is stored under, so a
// record copied or misplaced under another key (or another revision) fails
// validation just like a flipped bit does.
const (
	latestPrefix  = 'k'
	historyPrefix = 'h'

	latestHeader  = 4 + 8 + 8
	historyHeader = 4 + 1 + 8
	metaLen       = 4 + 8
)

// hasPrevFlag is set in a history record's type byte when the record
// carries the previous value (storage.Event.PrevValue): updates and deletes
// written since the store recorded it. Records without it — creates, and
// every record written before — keep the original layout, so old stores need
// no migration; their updates and deletes replay with a nil PrevValue. A
// binary older than this flag reports such records as corrupt (unknown
// type): downgrading over new history means compacting it first.
const hasPrevFlag = 0x80

const (
	metaCurrentKey   = "m/current"
	metaCompactedKey = "m/compacted"
)

// checksum is CRC32C (hardware-accelerated on amd64 and arm64). MakeTable
// returns the standard library's cached Castagnoli table, so this package
// keeps no globals of its own.
func checksum(dbKey, body []byte) uint32 {
	tab := crc32.MakeTable(crc32.Castagnoli)
	return crc32.Update(crc32.Update(0, tab, dbKey), tab, body)
}

func latestKey(key string) []byte {
	b := make([]byte, 1+len(key))
	b[0] = latestPrefix
	copy(b[1:], key)
	return b
}

// prefixBounds returns the [lower, upper) pebble key range holding every
// latest record whose key starts with prefix.
func prefixBounds(prefix string) (lower, upper []byte) {
	lower = latestKey(prefix)
	upper = append([]byte(nil), lower...)
	// Increment the last byte that is not 0xff, dropping the 0xff tail: that
	// is the smallest key greater than every key with this prefix. Because
	// lower starts with 'k', this always terminates.
	for i := len(upper) - 1; i >= 0; i-- {
		if upper[i] != 0xff {
			upper[i]++
			return lower, upper[:i+1]
		}
	}
	panic("unreachable: latest keys start with 'k'")
}

func historyKey(rev int64) []byte {
	b := make([]byte, 9)
	b[0] = historyPrefix
	binary.BigEndian.PutUint64(b[1:], uint64(rev))
	return b
}

func encodeLatest(dbKey []byte, modRev, createRev int64, value []byte) []byte {
	b := make([]byte, latestHeader+len(value))
	putLatest(b, dbKey, modRev, createRev, value)
	return b
}

// putLatest writes the latest record into b, which is latestHeader +
// len(value) bytes: the writer encodes straight into a Pebble batch.
func putLatest(b, dbKey []byte, modRev, createRev int64, value []byte) {
	binary.BigEndian.PutUint64(b[4:], uint64(modRev))
	binary.BigEndian.PutUint64(b[12:], uint64(createRev))
	copy(b[latestHeader:], value)
	binary.BigEndian.PutUint32(b, checksum(dbKey, b[4:]))
}

// decodeLatest validates and decodes a latest record. The returned value is a
// fresh copy: pebble owns rec and may reuse it once its closer is called.
func decodeLatest(key string, dbKey, rec []byte) (storage.KeyValue, error) {
	if len(rec) < latestHeader {
		return storage.KeyValue{}, fmt.Errorf("embedded: record for key %q is %d bytes, shorter than its %d-byte header: %w", key, len(rec), latestHeader, storage.ErrCorrupt)
	}
	modRev := int64(binary.BigEndian.Uint64(rec[4:]))
	if got, want := checksum(dbKey, rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return storage.KeyValue{}, fmt.Errorf("embedded: record for key %q at revision %d fails its checksum (stored %08x, computed %08x): %w", key, modRev, want, got, storage.ErrCorrupt)
	}
	return storage.KeyValue{
		Key:            key,
		Value:          append([]byte{}, rec[latestHeader:]...),
		ModRevision:    modRev,
		CreateRevision: int64(binary.BigEndian.Uint64(rec[12:])),
	}, nil
}

// encodeHistory encodes ev's history record. hasPrev says ev.PrevValue is
// recorded (the key existed: an update or a delete), even when empty.
func encodeHistory(ev storage.Event, hasPrev bool) []byte {
	b := make([]byte, historyLen(ev, hasPrev))
	putHistory(b, ev, hasPrev)
	return b
}

// historyLen is the size of ev's history record.
func historyLen(ev storage.Event, hasPrev bool) int {
	n := historyHeader + uvarintLen(uint64(len(ev.Key))) + len(ev.Key) + len(ev.Value)
	if hasPrev {
		n += uvarintLen(uint64(len(ev.Value))) + 8 + len(ev.PrevValue)
	}
	return n
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// putHistory writes ev's history record into b, which is historyLen bytes:
// the writer encodes straight into a Pebble batch.
func putHistory(b []byte, ev storage.Event, hasPrev bool) {
	b[4] = byte(ev.Type)
	if hasPrev {
		b[4] |= hasPrevFlag
	}
	binary.BigEndian.PutUint64(b[5:], uint64(ev.CreateRevision))
	off := historyHeader + binary.PutUvarint(b[historyHeader:], uint64(len(ev.Key)))
	off += copy(b[off:], ev.Key)
	if hasPrev {
		off += binary.PutUvarint(b[off:], uint64(len(ev.Value)))
	}
	off += copy(b[off:], ev.Value)
	if hasPrev {
		binary.BigEndian.PutUint64(b[off:], uint64(ev.PrevModRevision))
		off += 8
		copy(b[off:], ev.PrevValue)
	}
	binary.BigEndian.PutUint32(b, checksum(historyKey(ev.Revision), b[4:]))
}

// decodeHistory validates and decodes the history record stored under dbKey.
// The returned event owns its Value and PrevValue.
func decodeHistory(dbKey, rec []byte) (storage.Event, error) {
	return decodeHistoryFor(dbKey, rec, "")
}

// decodeHistoryFor is decodeHistory for a reader interested only in keys
// with the given prefix: for other keys the record is still validated but
// its values are not copied (a watch replaying the global log would
// otherwise copy every other resource's values only to drop them).
func decodeHistoryFor(dbKey, rec []byte, prefix string) (storage.Event, error) {
	if len(dbKey) != 9 || dbKey[0] != historyPrefix {
		return storage.Event{}, fmt.Errorf("embedded: malformed history key %x: %w", dbKey, storage.ErrCorrupt)
	}
	rev := int64(binary.BigEndian.Uint64(dbKey[1:]))
	if len(rec) < historyHeader {
		return storage.Event{}, fmt.Errorf("embedded: history record at revision %d is %d bytes, shorter than its header: %w", rev, len(rec), storage.ErrCorrupt)
	}
	if got, want := checksum(dbKey, rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return storage.Event{}, fmt.Errorf("embedded: history record at revision %d%s fails its checksum (stored %08x, computed %08x): %w", rev, unverifiedKey(rec), want, got, storage.ErrCorrupt)
	}
	typ := storage.EventType(rec[4] &^ hasPrevFlag)
	hasPrev := rec[4]&hasPrevFlag != 0
	keyLen, n := binary.Uvarint(rec[historyHeader:])
	if n <= 0 || keyLen > uint64(len(rec)-historyHeader-n) {
		return storage.Event{}, fmt.Errorf("embedded: history record at revision %d has a bad key length: %w", rev, storage.ErrCorrupt)
	}
	off := historyHeader + n
	key := string(rec[off : off+int(keyLen)])
	off += int(keyLen)
	if typ != storage.EventPut && typ != storage.EventDelete {
		return storage.Event{}, fmt.Errorf("embedded: history record for key %q at revision %d has unknown type %d: %w", key, rev, rec[4], storage.ErrCorrupt)
	}
	ev := storage.Event{Type: typ, Key: key, Revision: rev, CreateRevision: int64(binary.BigEndian.Uint64(rec[5:]))}
	keep := strings.HasPrefix(key, prefix)
	value := rec[off:]
	if hasPrev {
		valLen, vn := binary.Uvarint(rec[off:])
		if vn <= 0 || len(rec)-off-vn < 8 || valLen > uint64(len(rec)-off-vn-8) {
			return storage.Event{}, fmt.Errorf("embedded: history record for key %q at revision %d has a bad value length: %w", key, rev, storage.ErrCorrupt)
		}
		off += vn
		value = rec[off : off+int(valLen)]
		off += int(valLen)
		ev.PrevModRevision = int64(binary.BigEndian.Uint64(rec[off:]))
		if keep {
			ev.PrevValue = append([]byte{}, rec[off+8:]...)
		}
	}
	if typ == storage.EventPut && keep {
		ev.Value = append([]byte{}, value...)
	}
	return ev, nil
}

// unverifiedKey names the key a damaged history record appears to be about,
// for the operator reading the error; the damage may be in the key itself.
func unverifiedKey(rec []byte) string {
	keyLen, n := binary.Uvarint(rec[historyHeader:])
	if n <= 0 || keyLen > uint64(len(rec)-historyHeader-n) || keyLen > 4096 {
		return ""
	}
	return fmt.Sprintf(" (apparently for key %q)", rec[historyHeader+n:historyHeader+n+int(keyLen)])
}

func encodeMeta(dbKey string, rev int64) []byte {
	b := make([]byte, metaLen)
	binary.BigEndian.PutUint64(b[4:], uint64(rev))
	binary.BigEndian.PutUint32(b, checksum([]byte(dbKey), b[4:]))
	return b
}

func decodeMeta(dbKey string, rec []byte) (int64, error) {
	if len(rec) != metaLen {
		return 0, fmt.Errorf("embedded: meta record %q is %d bytes, want %d: %w", dbKey, len(rec), metaLen, storage.ErrCorrupt)
	}
	if got, want := checksum([]byte(dbKey), rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return 0, fmt.Errorf("embedded: meta record %q fails its checksum (stored %08x, computed %08x): %w", dbKey, want, got, storage.ErrCorrupt)
	}
	return int64(binary.BigEndian.Uint64(rec[4:])), nil
}

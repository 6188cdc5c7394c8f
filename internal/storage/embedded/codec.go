package embedded

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// On-disk layout (FORMAT.md has it byte by byte, doc.go the reasoning):
//
//	"h" + bigendian(rev) -> history record: crc32c(4) | type(1) | createRev(8) | [prevModRev(8)] | uvarint(len key) | key | value
//	                        prevModRev is there when type has prevRevFlag (updates and deletes, but not
//	                        an update over a damaged value, whose previous value is unknown);
//	                        the previous value is the value of the history record at prevModRev.
//	"x" + bigendian(rev) -> key-log record: crc32c(4) | type(1) | createRev(8) | key   (keyindex.go)
//	                        the key the write at rev wrote: Open rebuilds the key index from these
//	"r" + bigendian(rev) -> retire record:  crc32c(4) | prevModRev(8) | flags(1)
//	                        history that the write at rev made obsolete: the record at prevModRev,
//	                        and with retireSelf the record at rev too (a delete)
//	"c" + bigendian(C) + key -> checkpoint record: crc32c(4) | modRev(8) | createRev(8)   (checkpoint.go)
//	"m/current"          -> meta record:    crc32c(4) | rev(8)   (revision of the last committed write)
//	"m/compacted"        -> meta record:    crc32c(4) | rev(8)   (history <= rev is gone except each key's write current at rev)
//	"m/checkpoint"       -> meta record:    crc32c(4) | C(8)     (the latest checkpoint's revision)
//	"m/format"           -> meta record:    crc32c(4) | format(8)   (format.go)
//
// Every checksum also covers the pebble key the record is stored under, so a
// record copied or misplaced under another key (or another revision) fails
// validation just like a flipped bit does.
const (
	historyPrefix = 'h'
	retirePrefix  = 'r'
	keyLogPrefix  = 'x'

	historyHeader = 4 + 1 + 8
	metaLen       = 4 + 8
	retireLen     = 4 + 8 + 1
	keyLogHeader  = 4 + 1 + 8
	checkpointLen = 4 + 8 + 8
)

// prevRevFlag in a history record's type byte: the record names the
// revision of the value it replaced (updates and deletes); that value is
// the history record there, which compaction keeps until it compacts past
// this one.
const prevRevFlag = 0x40

// retireSelf in a retire record's flags: the write at its revision was a
// delete, so its own history record goes too.
const retireSelf = 1

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

func historyKey(rev int64) []byte {
	b := make([]byte, 9)
	b[0] = historyPrefix
	binary.BigEndian.PutUint64(b[1:], uint64(rev))
	return b
}

// encodeCheckpoint encodes the checkpoint record stored under dbKey: the
// revisions m of the key dbKey names.
func encodeCheckpoint(dbKey []byte, m keyMeta) []byte {
	b := make([]byte, checkpointLen)
	binary.BigEndian.PutUint64(b[4:], uint64(m.mod))
	binary.BigEndian.PutUint64(b[12:], uint64(m.create))
	binary.BigEndian.PutUint32(b, checksum(dbKey, b[4:]))
	return b
}

// decodeCheckpoint validates and decodes the checkpoint record stored
// under dbKey; ok is false if it is damaged.
func decodeCheckpoint(dbKey, rec []byte) (m keyMeta, ok bool) {
	if len(rec) != checkpointLen || checksum(dbKey, rec[4:]) != binary.BigEndian.Uint32(rec) {
		return keyMeta{}, false
	}
	m = keyMeta{mod: int64(binary.BigEndian.Uint64(rec[4:])), create: int64(binary.BigEndian.Uint64(rec[12:]))}
	return m, m.create > 0 && m.create <= m.mod
}

// encodeHistory encodes ev's history record. ev.PrevModRevision != 0 marks
// an update or delete (prevRevFlag); ev.PrevValue is not stored.
func encodeHistory(ev storage.Event) []byte {
	b := make([]byte, historyLen(ev))
	putHistory(b, ev)
	return b
}

// historyLen is the size of ev's history record.
func historyLen(ev storage.Event) int {
	n := historyHeader + uvarintLen(uint64(len(ev.Key))) + len(ev.Key) + len(ev.Value)
	if ev.PrevModRevision != 0 {
		n += 8
	}
	return n
}

func uvarintLen(v uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], v)
}

// putHistory writes ev's history record into b, which is historyLen bytes:
// the writer encodes straight into a Pebble batch.
func putHistory(b []byte, ev storage.Event) {
	b[4] = byte(ev.Type)
	binary.BigEndian.PutUint64(b[5:], uint64(ev.CreateRevision))
	off := historyHeader
	if ev.PrevModRevision != 0 {
		b[4] |= prevRevFlag
		binary.BigEndian.PutUint64(b[off:], uint64(ev.PrevModRevision))
		off += 8
	}
	off += binary.PutUvarint(b[off:], uint64(len(ev.Key)))
	off += copy(b[off:], ev.Key)
	copy(b[off:], ev.Value)
	binary.BigEndian.PutUint32(b, checksum(historyKey(ev.Revision), b[4:]))
}

// decodeHistory validates and decodes the history record stored under dbKey.
// The returned event owns its Value. Its PrevValue is not in the record: an
// event with a PrevModRevision has it in the history record there
// (readPrevValue); an update without one replaced a value that was damaged
// (writer.go) and has none.
func decodeHistory(dbKey, rec []byte) (storage.Event, error) {
	return decodeHistoryFor(dbKey, rec, "")
}

// decodeHistoryFor is decodeHistory for a reader interested only in keys
// with the given prefix: for other keys the record is still validated but
// its value is not copied (a watch replaying the global log would
// otherwise copy every other resource's values only to drop them).
func decodeHistoryFor(dbKey, rec []byte, prefix string) (ev storage.Event, err error) {
	if len(dbKey) != 9 || dbKey[0] != historyPrefix {
		return ev, fmt.Errorf("embedded: malformed history key %x: %w", dbKey, storage.ErrCorrupt)
	}
	rev := int64(binary.BigEndian.Uint64(dbKey[1:]))
	if len(rec) < historyHeader {
		return ev, fmt.Errorf("embedded: history record at revision %d is %d bytes, shorter than its header: %w", rev, len(rec), storage.ErrCorrupt)
	}
	if got, want := checksum(dbKey, rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return ev, fmt.Errorf("embedded: history record at revision %d%s fails its checksum (stored %08x, computed %08x): %w", rev, unverifiedKey(rec), want, got, storage.ErrCorrupt)
	}
	typ := storage.EventType(rec[4] &^ prevRevFlag)
	off := historyHeader
	if rec[4]&prevRevFlag != 0 {
		if len(rec) < off+8 {
			return ev, fmt.Errorf("embedded: history record at revision %d has a bad header: %w", rev, storage.ErrCorrupt)
		}
		ev.PrevModRevision = int64(binary.BigEndian.Uint64(rec[off:]))
		off += 8
	}
	keyLen, n := binary.Uvarint(rec[off:])
	if n <= 0 || keyLen > uint64(len(rec)-off-n) {
		return storage.Event{}, fmt.Errorf("embedded: history record at revision %d has a bad key length: %w", rev, storage.ErrCorrupt)
	}
	off += n
	key := string(rec[off : off+int(keyLen)])
	off += int(keyLen)
	if typ != storage.EventPut && typ != storage.EventDelete {
		return storage.Event{}, fmt.Errorf("embedded: history record for key %q at revision %d has unknown type %d: %w", key, rev, rec[4], storage.ErrCorrupt)
	}
	if rec[4]&prevRevFlag != 0 && (ev.PrevModRevision <= 0 || ev.PrevModRevision >= rev) {
		return storage.Event{}, fmt.Errorf("embedded: history record for key %q at revision %d names previous revision %d: %w", key, rev, ev.PrevModRevision, storage.ErrCorrupt)
	}
	if typ == storage.EventDelete && ev.PrevModRevision == 0 {
		// A delete always read the value it deleted (it returns it).
		return storage.Event{}, fmt.Errorf("embedded: history record for key %q at revision %d is a delete without a previous revision: %w", key, rev, storage.ErrCorrupt)
	}
	ev.Type, ev.Key, ev.Revision = typ, key, rev
	ev.CreateRevision = int64(binary.BigEndian.Uint64(rec[5:]))
	if typ == storage.EventPut && strings.HasPrefix(key, prefix) {
		ev.Value = append([]byte{}, rec[off:]...)
	}
	return ev, nil
}

// unverifiedKey names the key a damaged history record appears to be about,
// for the operator reading the error; the damage may be in the key itself.
func unverifiedKey(rec []byte) string {
	off := historyHeader
	if rec[4]&prevRevFlag != 0 {
		off += 8
	}
	if len(rec) < off {
		return ""
	}
	keyLen, n := binary.Uvarint(rec[off:])
	if n <= 0 || keyLen > uint64(len(rec)-off-n) || keyLen > 4096 {
		return ""
	}
	return fmt.Sprintf(" (apparently for key %q)", rec[off+n:off+n+int(keyLen)])
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

func retireKey(rev int64) []byte {
	b := historyKey(rev)
	b[0] = retirePrefix
	return b
}

func encodeRetire(rev, prevModRev int64, flags byte) []byte {
	b := make([]byte, retireLen)
	binary.BigEndian.PutUint64(b[4:], uint64(prevModRev))
	b[12] = flags
	binary.BigEndian.PutUint32(b, checksum(retireKey(rev), b[4:]))
	return b
}

// decodeRetire validates and decodes the retire record stored under dbKey.
func decodeRetire(dbKey, rec []byte) (rev, prevModRev int64, flags byte, err error) {
	if len(dbKey) != 9 || dbKey[0] != retirePrefix {
		return 0, 0, 0, fmt.Errorf("embedded: malformed retire key %x: %w", dbKey, storage.ErrCorrupt)
	}
	rev = int64(binary.BigEndian.Uint64(dbKey[1:]))
	if len(rec) != retireLen {
		return rev, 0, 0, fmt.Errorf("embedded: retire record at revision %d is %d bytes, want %d: %w", rev, len(rec), retireLen, storage.ErrCorrupt)
	}
	if got, want := checksum(dbKey, rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return rev, 0, 0, fmt.Errorf("embedded: retire record at revision %d fails its checksum (stored %08x, computed %08x): %w", rev, want, got, storage.ErrCorrupt)
	}
	prevModRev = int64(binary.BigEndian.Uint64(rec[4:]))
	if prevModRev <= 0 || prevModRev >= rev || rec[12]&^retireSelf != 0 {
		return rev, 0, 0, fmt.Errorf("embedded: retire record at revision %d is malformed: %w", rev, storage.ErrCorrupt)
	}
	return rev, prevModRev, rec[12], nil
}

func keyLogKey(rev int64) []byte {
	b := historyKey(rev)
	b[0] = keyLogPrefix
	return b
}

// keyLogLen is the size of the key-log record of a write of key.
func keyLogLen(key string) int { return keyLogHeader + len(key) }

// putKeyLog writes into b, which is keyLogLen bytes, the key-log record of
// the write at rev: a put or delete of key, created at createRev.
func putKeyLog(b []byte, rev int64, typ storage.EventType, createRev int64, key string) {
	b[4] = byte(typ)
	binary.BigEndian.PutUint64(b[5:], uint64(createRev))
	copy(b[keyLogHeader:], key)
	binary.BigEndian.PutUint32(b, checksum(keyLogKey(rev), b[4:]))
}

// keyLogEntry is a decoded key-log record. key aliases the record.
type keyLogEntry struct {
	rev, create int64
	typ         storage.EventType
	key         []byte
}

// decodeKeyLog validates and decodes the key-log record stored under dbKey.
func decodeKeyLog(dbKey, rec []byte) (keyLogEntry, error) {
	if len(dbKey) != 9 || dbKey[0] != keyLogPrefix {
		return keyLogEntry{}, fmt.Errorf("embedded: malformed key-log key %x: %w", dbKey, storage.ErrCorrupt)
	}
	e := keyLogEntry{rev: int64(binary.BigEndian.Uint64(dbKey[1:]))}
	if len(rec) < keyLogHeader {
		return e, fmt.Errorf("embedded: key-log record at revision %d is %d bytes, shorter than its header: %w", e.rev, len(rec), storage.ErrCorrupt)
	}
	if got, want := checksum(dbKey, rec[4:]), binary.BigEndian.Uint32(rec); got != want {
		return e, fmt.Errorf("embedded: key-log record at revision %d fails its checksum (stored %08x, computed %08x): %w", e.rev, want, got, storage.ErrCorrupt)
	}
	e.typ = storage.EventType(rec[4])
	e.create = int64(binary.BigEndian.Uint64(rec[5:]))
	e.key = rec[keyLogHeader:]
	if e.typ != storage.EventPut && e.typ != storage.EventDelete || e.create <= 0 || e.create > e.rev {
		return keyLogEntry{rev: e.rev}, fmt.Errorf("embedded: key-log record at revision %d is malformed (type %d, created at %d): %w", e.rev, rec[4], e.create, storage.ErrCorrupt)
	}
	return e, nil
}

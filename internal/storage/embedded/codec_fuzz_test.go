package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// withChecksum returns body with a valid checksum for dbKey in front, so the
// fuzzer reaches the parsing behind the checksum instead of stopping at it.
func withChecksum(dbKey, body []byte) []byte {
	rec := make([]byte, 4+len(body))
	copy(rec[4:], body)
	binary.BigEndian.PutUint32(rec, checksum(dbKey, body))
	return rec
}

// FuzzDecodeRecords: no record read from disk, damaged or foreign, makes a
// decoder panic; each either decodes or fails with ErrCorrupt. Records that
// decode re-encode to the same bytes.
func FuzzDecodeRecords(f *testing.F) {
	f.Add("/core/pods/ns/p", int64(7), []byte("value"), false)
	f.Add("/k", int64(1), encodeHistory(storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("v"), Revision: 1, CreateRevision: 1})[4:], true)
	f.Add("/k", int64(3), encodeHistory(storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 3, CreateRevision: 1, PrevModRevision: 2})[4:], true)
	f.Add("/k", int64(5), encodeRetire(5, 2, retireSelf)[4:], true)
	f.Add("/k", int64(5), encodeKeyLog(5, storage.EventDelete, 2, "/k")[4:], true)
	f.Add("/k", int64(5), encodeCheckpoint(checkpointKey(5, []byte("/k")), keyMeta{mod: 4, create: 2})[4:], true)
	f.Add("", int64(0), []byte{}, true)
	f.Add("/k", int64(2), []byte{0x81, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}, true)
	// An overlong key-length varint (0x81 0x00 is 1).
	f.Add("/k", int64(4), []byte{byte(storage.EventPut), 0, 0, 0, 0, 0, 0, 0, 1, 0x81, 0x00, 'k'}, true)
	f.Fuzz(func(t *testing.T, key string, rev int64, body []byte, fixChecksum bool) {
		check := func(what string, err error) {
			if err != nil && !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("%s: %v, want ErrCorrupt", what, err)
			}
		}
		cKey := checkpointKey(rev, []byte(key))
		rec := body
		if fixChecksum {
			rec = withChecksum(cKey, body)
		}
		if m, ok := decodeCheckpoint(cKey, rec); ok && !bytes.Equal(encodeCheckpoint(cKey, m), rec) {
			t.Fatalf("checkpoint record %x does not re-encode to itself", rec)
		}

		hKey := historyKey(rev)
		rec = body
		if fixChecksum {
			rec = withChecksum(hKey, body)
		}
		ev, err := decodeHistory(hKey, rec)
		check("decodeHistory", err)
		if err == nil {
			// Byte equality is too strong (varints may be overlong, a
			// delete's value bytes are dropped): what decodes must
			// re-encode to a record that decodes to the same event.
			again, err := decodeHistory(hKey, encodeHistory(ev))
			if err != nil || !reflect.DeepEqual(normalize(again), normalize(ev)) {
				t.Fatalf("history record %x: decoded %+v, re-encoded and decoded %+v, %v", rec, ev, again, err)
			}
		}
		_, err = decodeHistoryFor(hKey, rec, "/other/")
		check("decodeHistoryFor", err)
		_, err = decodeHistory(body, rec) // a malformed history key
		check("decodeHistory with a foreign key", err)

		rKey := retireKey(rev)
		rec = body
		if fixChecksum {
			rec = withChecksum(rKey, body)
		}
		r, prev, flags, err := decodeRetire(rKey, rec)
		check("decodeRetire", err)
		if err == nil && !bytes.Equal(encodeRetire(r, prev, flags), rec) {
			t.Fatalf("retire record %x does not re-encode to itself", rec)
		}

		xKey := keyLogKey(rev)
		rec = body
		if fixChecksum {
			rec = withChecksum(xKey, body)
		}
		e, err := decodeKeyLog(xKey, rec)
		check("decodeKeyLog", err)
		if err == nil && !bytes.Equal(encodeKeyLog(e.rev, e.typ, e.create, string(e.key)), rec) {
			t.Fatalf("key-log record %x does not re-encode to itself", rec)
		}
		_, err = decodeKeyLog(body, rec) // a malformed key-log key
		check("decodeKeyLog with a foreign key", err)

		_, err = decodeMeta(metaCurrentKey, body)
		check("decodeMeta", err)
	})
}

// normalize maps empty value slices to nil: encoding does not tell them
// apart.
func normalize(ev storage.Event) storage.Event {
	if len(ev.Value) == 0 {
		ev.Value = nil
	}
	if len(ev.PrevValue) == 0 {
		ev.PrevValue = nil
	}
	return ev
}

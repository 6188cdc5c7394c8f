package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// encodeHistoryV1 encodes ev as format 1 wrote updates and deletes: the
// previous value inline (hasPrevFlag). Only tests write it now.
func encodeHistoryV1(ev storage.Event) []byte {
	var b []byte
	b = append(b, 0, 0, 0, 0, byte(ev.Type)|hasPrevFlag)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.CreateRevision))
	b = binary.AppendUvarint(b, uint64(len(ev.Key)))
	b = append(b, ev.Key...)
	b = binary.AppendUvarint(b, uint64(len(ev.Value)))
	b = append(b, ev.Value...)
	b = binary.BigEndian.AppendUint64(b, uint64(ev.PrevModRevision))
	b = append(b, ev.PrevValue...)
	binary.BigEndian.PutUint32(b, checksum(historyKey(ev.Revision), b[4:]))
	return b
}

// TestHistoryRecordFormats: every history layout a store may hold decodes to
// the right event, and says where the previous value is.
func TestHistoryRecordFormats(t *testing.T) {
	upd := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("new"), Revision: 7, CreateRevision: 3, PrevValue: []byte("old"), PrevModRevision: 5}
	del := storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 8, CreateRevision: 3, PrevValue: []byte{}, PrevModRevision: 7}
	create := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("v"), Revision: 2, CreateRevision: 2}
	withoutPrev := func(ev storage.Event, keepRev bool) storage.Event {
		ev.PrevValue = nil
		if !keepRev {
			ev.PrevModRevision = 0
		}
		return ev
	}
	for _, tc := range []struct {
		name          string
		rec           []byte
		want          storage.Event
		wantPrevByRev bool
	}{
		{"create", encodeHistory(create), create, false},
		{"update", encodeHistory(upd), withoutPrev(upd, true), true},
		{"delete", encodeHistory(del), withoutPrev(del, true), true},
		{"update in format 1, previous value inline", encodeHistoryV1(upd), upd, false},
		{"delete of an empty value in format 1", encodeHistoryV1(del), del, false},
		{"update in format 0, previous value unknown", encodeHistory(withoutPrev(upd, false)), withoutPrev(upd, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, prevByRev, err := decodeHistory(historyKey(tc.want.Revision), tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tc.want.Type || got.Key != tc.want.Key || got.Revision != tc.want.Revision || got.CreateRevision != tc.want.CreateRevision || got.PrevModRevision != tc.want.PrevModRevision ||
				!bytes.Equal(got.Value, tc.want.Value) || (got.PrevValue == nil) != (tc.want.PrevValue == nil) || !bytes.Equal(got.PrevValue, tc.want.PrevValue) {
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
			if prevByRev != tc.wantPrevByRev {
				t.Fatalf("prevByRev %v, want %v", prevByRev, tc.wantPrevByRev)
			}
		})
	}
	if rec := encodeHistory(create); rec[4] != byte(storage.EventPut) {
		t.Fatalf("create record type byte %#x", rec[4])
	}

	for _, tc := range []struct {
		name string
		rev  int64
		rec  []byte
	}{
		{"format-1 value length past the end", upd.Revision, func() []byte {
			rec := encodeHistoryV1(upd)
			rec[historyHeader+1+len(upd.Key)] = 0x7f
			return reseal(historyKey(upd.Revision), rec)
		}()},
		{"previous revision not below its own", upd.Revision, encodeHistory(storage.Event{Type: storage.EventPut, Key: "/k", Revision: 7, CreateRevision: 3, PrevModRevision: 7})},
		{"both previous-value flags", upd.Revision, func() []byte {
			rec := encodeHistory(upd)
			rec[4] |= hasPrevFlag
			return reseal(historyKey(upd.Revision), rec)
		}()},
		{"unknown type", create.Revision, func() []byte {
			rec := encodeHistory(create)
			rec[4] = 9
			return reseal(historyKey(create.Revision), rec)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := decodeHistory(historyKey(tc.rev), tc.rec); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestRetireRecords: retire records round-trip, and damaged ones are
// corruption.
func TestRetireRecords(t *testing.T) {
	rev, prev, flags, err := decodeRetire(retireKey(9), encodeRetire(9, 4, retireSelf))
	if err != nil || rev != 9 || prev != 4 || flags != retireSelf {
		t.Fatalf("decoded %d, %d, %d, %v; want 9, 4, %d, nil", rev, prev, flags, err, retireSelf)
	}
	for _, tc := range []struct {
		name string
		key  []byte
		rec  []byte
	}{
		{"under another revision", retireKey(10), encodeRetire(9, 4, 0)},
		{"previous not below its own", retireKey(9), encodeRetire(9, 9, 0)},
		{"unknown flag", retireKey(9), encodeRetire(9, 4, 2)},
		{"truncated", retireKey(9), encodeRetire(9, 4, 0)[:retireLen-1]},
		{"history key", historyKey(9), encodeRetire(9, 4, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, _, err := decodeRetire(tc.key, tc.rec); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestKeyLogRecords: key-log records round-trip, and damaged ones are
// corruption.
func TestKeyLogRecords(t *testing.T) {
	e, err := decodeKeyLog(keyLogKey(9), encodeKeyLog(9, storage.EventDelete, 4, "/ns/k"))
	if err != nil || e.rev != 9 || e.typ != storage.EventDelete || e.create != 4 || string(e.key) != "/ns/k" {
		t.Fatalf("decoded %+v, %v", e, err)
	}
	for _, tc := range []struct {
		name string
		key  []byte
		rec  []byte
	}{
		{"under another revision", keyLogKey(10), encodeKeyLog(9, storage.EventPut, 4, "/k")},
		{"created after it", keyLogKey(9), encodeKeyLog(9, storage.EventPut, 10, "/k")},
		{"not created", keyLogKey(9), encodeKeyLog(9, storage.EventPut, 0, "/k")},
		{"unknown type", keyLogKey(9), encodeKeyLog(9, 7, 4, "/k")},
		{"truncated", keyLogKey(9), encodeKeyLog(9, storage.EventPut, 4, "/k")[:keyLogHeader-1]},
		{"key cut short", keyLogKey(9), encodeKeyLog(9, storage.EventPut, 4, "/k")[:keyLogHeader+1]},
		{"history key", historyKey(9), encodeKeyLog(9, storage.EventPut, 4, "/k")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeKeyLog(tc.key, tc.rec); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

// encodeKeyLog is putKeyLog into a fresh buffer.
func encodeKeyLog(rev int64, typ storage.EventType, createRev int64, key string) []byte {
	b := make([]byte, keyLogLen(key))
	putKeyLog(b, rev, typ, createRev, key)
	return b
}

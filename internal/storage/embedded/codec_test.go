package embedded

import (
	"bytes"
	"errors"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// TestHistoryRecords: history records round-trip, each saying where its
// previous value is, and damaged ones are corruption.
func TestHistoryRecords(t *testing.T) {
	upd := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("new"), Revision: 7, CreateRevision: 3, PrevModRevision: 5}
	del := storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 8, CreateRevision: 3, PrevModRevision: 7}
	create := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("v"), Revision: 2, CreateRevision: 2}
	// An update that replaced a damaged value (writer.go) names none.
	repair := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("fixed"), Revision: 9, CreateRevision: 3}
	for _, tc := range []struct {
		name string
		ev   storage.Event
	}{
		{"create", create},
		{"update", upd},
		{"delete", del},
		{"update over a damaged value", repair},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeHistory(historyKey(tc.ev.Revision), encodeHistory(tc.ev))
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tc.ev.Type || got.Key != tc.ev.Key || got.Revision != tc.ev.Revision || got.CreateRevision != tc.ev.CreateRevision || got.PrevModRevision != tc.ev.PrevModRevision ||
				!bytes.Equal(got.Value, tc.ev.Value) || got.PrevValue != nil {
				t.Fatalf("decoded %+v, want %+v", got, tc.ev)
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
		{"previous revision not below its own", upd.Revision, encodeHistory(storage.Event{Type: storage.EventPut, Key: "/k", Revision: 7, CreateRevision: 3, PrevModRevision: 7})},
		{"delete without a previous revision", del.Revision, encodeHistory(storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 8, CreateRevision: 3})},
		{"the flag of format 1's inline previous value", upd.Revision, func() []byte {
			rec := encodeHistory(upd)
			rec[4] |= 0x80
			return reseal(historyKey(upd.Revision), rec)
		}()},
		{"unknown type", create.Revision, func() []byte {
			rec := encodeHistory(create)
			rec[4] = 9
			return reseal(historyKey(create.Revision), rec)
		}()},
		{"previous revision cut short", upd.Revision, reseal(historyKey(upd.Revision), encodeHistory(upd)[:historyHeader+4])},
		{"key length past the end", create.Revision, func() []byte {
			rec := encodeHistory(create)
			rec[historyHeader] = 0x7f
			return reseal(historyKey(create.Revision), rec)
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeHistory(historyKey(tc.rev), tc.rec); !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("got %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestCheckpointRecords: checkpoint records round-trip, and damaged ones
// are refused.
func TestCheckpointRecords(t *testing.T) {
	ck := checkpointKey(9, []byte("/ns/k"))
	if m, ok := decodeCheckpoint(ck, encodeCheckpoint(ck, keyMeta{mod: 7, create: 4})); !ok || m != (keyMeta{mod: 7, create: 4}) {
		t.Fatalf("decoded %+v, %v", m, ok)
	}
	for _, tc := range []struct {
		name string
		key  []byte
		rec  []byte
	}{
		{"under another key", checkpointKey(9, []byte("/ns/j")), encodeCheckpoint(ck, keyMeta{mod: 7, create: 4})},
		{"under another checkpoint", checkpointKey(10, []byte("/ns/k")), encodeCheckpoint(ck, keyMeta{mod: 7, create: 4})},
		{"created after its write", ck, encodeCheckpoint(ck, keyMeta{mod: 4, create: 7})},
		{"truncated", ck, encodeCheckpoint(ck, keyMeta{mod: 7, create: 4})[:checkpointLen-1]},
		{"with a value", ck, reseal(ck, append(encodeCheckpoint(ck, keyMeta{mod: 7, create: 4}), 'v'))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := decodeCheckpoint(tc.key, tc.rec); ok {
				t.Fatal("decoded")
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

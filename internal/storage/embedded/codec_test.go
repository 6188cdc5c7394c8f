package embedded

import (
	"bytes"
	"errors"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// TestHistoryRecordFormats: records with and without the previous value
// decode; an update written before previous values were recorded (no
// hasPrevFlag: the original layout, which creates still use) decodes with
// a nil PrevValue, and a bad value length is corruption.
func TestHistoryRecordFormats(t *testing.T) {
	upd := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("new"), Revision: 7, CreateRevision: 3, PrevValue: []byte("old"), PrevModRevision: 5}
	del := storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 8, CreateRevision: 3, PrevValue: []byte{}, PrevModRevision: 7}
	for _, tc := range []struct {
		name    string
		ev      storage.Event
		hasPrev bool
		want    storage.Event
	}{
		{"update with prev", upd, true, upd},
		{"delete of an empty value", del, true, del},
		{"update in the old format", upd, false, storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("new"), Revision: 7, CreateRevision: 3}},
		{"delete in the old format", del, false, storage.Event{Type: storage.EventDelete, Key: "/k", Revision: 8, CreateRevision: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := tc.ev
			if !tc.hasPrev {
				ev.PrevValue, ev.PrevModRevision = nil, 0 // what the old encoder wrote
			}
			got, err := decodeHistory(historyKey(ev.Revision), encodeHistory(ev, tc.hasPrev))
			if err != nil {
				t.Fatal(err)
			}
			if got.Type != tc.want.Type || got.Key != tc.want.Key || got.Revision != tc.want.Revision || got.CreateRevision != tc.want.CreateRevision || got.PrevModRevision != tc.want.PrevModRevision ||
				!bytes.Equal(got.Value, tc.want.Value) || (got.PrevValue == nil) != (tc.want.PrevValue == nil) || !bytes.Equal(got.PrevValue, tc.want.PrevValue) {
				t.Fatalf("decoded %+v, want %+v", got, tc.want)
			}
		})
	}
	// A create is byte-identical to the original layout.
	create := storage.Event{Type: storage.EventPut, Key: "/k", Value: []byte("v"), Revision: 2, CreateRevision: 2}
	if rec := encodeHistory(create, false); rec[4] != byte(storage.EventPut) {
		t.Fatalf("create record type byte %#x", rec[4])
	}
	rec := encodeHistory(upd, true)
	rec[historyHeader+1+len(upd.Key)] = 0x7f // value length past the end
	rec = reseal(historyKey(upd.Revision), rec)
	if _, err := decodeHistory(historyKey(upd.Revision), rec); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("bad value length: %v, want ErrCorrupt", err)
	}
}

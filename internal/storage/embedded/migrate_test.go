package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// copyTestdata copies testdata/<name> into a fresh directory: Open writes.
func copyTestdata(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", name)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "README.md" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestUpgradeFormat opens stores written by older versions
// (testdata/format*/README.md say what they hold): every value, every
// replayable event with its previous value, and compaction of the old
// history must come through the upgrade.
func TestUpgradeFormat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    string
		prepare func(t *testing.T, db *pebble.DB)
	}{
		{"format 2", "format2", func(*testing.T, *pebble.DB) {}},
		{"format 1", "format1", func(*testing.T, *pebble.DB) {}},
		{"format 0, without the key index", "format1", func(t *testing.T, db *pebble.DB) {
			if err := db.DeleteRange([]byte{indexPrefix}, []byte{indexPrefix + 1}, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := db.Delete([]byte(metaFormatKey), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTestdata(t, tc.data)
			db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{discardLogger()}})
			if err != nil {
				t.Fatal(err)
			}
			tc.prepare(t, db)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			s := openTest(t, Options{Dir: dir})
			checkUpgraded(t, s)
		})
	}
}

func checkUpgraded(t *testing.T, s *Store) {
	ctx := context.Background()
	key := func(n string) string { return "/registry/configmaps/default/" + n }
	big := make([]byte, 2000)
	for i := range big {
		big[i] = byte('A' + i%26)
	}
	if cur, _ := s.CurrentRevision(ctx); cur != 11 {
		t.Fatalf("current revision %d, want 11", cur)
	}
	if comp, _ := s.CompactedRevision(ctx); comp != 5 {
		t.Fatalf("compacted revision %d, want 5", comp)
	}
	live := []storage.KeyValue{
		{Key: key("a"), Value: append([]byte("a-v2"), big...), ModRevision: 4, CreateRevision: 1},
		{Key: key("b"), Value: []byte("b-v2"), ModRevision: 6, CreateRevision: 2},
		{Key: key("d"), Value: []byte("d-v1"), ModRevision: 5, CreateRevision: 5},
		{Key: key("e"), Value: []byte("e-v2"), ModRevision: 9, CreateRevision: 8},
	}
	sameKV := func(got, want storage.KeyValue) bool {
		return got.Key == want.Key && bytes.Equal(got.Value, want.Value) && got.ModRevision == want.ModRevision && got.CreateRevision == want.CreateRevision
	}
	checkReads := func(live []storage.KeyValue) {
		t.Helper()
		for _, want := range live {
			if got, err := s.Get(ctx, want.Key); err != nil || !sameKV(got, want) {
				t.Fatalf("Get %q: %q@%d/%d, %v; want %q@%d/%d", want.Key, got.Value, got.ModRevision, got.CreateRevision, err, want.Value, want.ModRevision, want.CreateRevision)
			}
		}
		list, _, err := s.List(ctx, "/registry/configmaps/")
		if err != nil || len(list) != len(live) {
			t.Fatalf("List: %d keys, %v; want %d", len(list), err, len(live))
		}
		for i := range list {
			if !sameKV(list[i], live[i]) {
				t.Fatalf("List[%d] = %q@%d, want %q@%d", i, list[i].Key, list[i].ModRevision, live[i].Key, live[i].ModRevision)
			}
		}
		for _, gone := range []string{key("c"), key("f")} {
			if _, err := s.Get(ctx, gone); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("Get of deleted %q: %v", gone, err)
			}
		}
	}
	checkReads(live)

	// Replay above the compacted revision, previous values included.
	w, err := s.Watch(ctx, "/registry/", 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.Event{
		{Type: storage.EventPut, Key: key("b"), Value: []byte("b-v2"), Revision: 6, CreateRevision: 2, PrevValue: []byte("b-v1"), PrevModRevision: 2},
		{Type: storage.EventDelete, Key: key("c"), Revision: 7, CreateRevision: 3, PrevValue: []byte("c-v1"), PrevModRevision: 3},
		{Type: storage.EventPut, Key: key("e"), Value: []byte("e-v1"), Revision: 8, CreateRevision: 8},
		{Type: storage.EventPut, Key: key("e"), Value: []byte("e-v2"), Revision: 9, CreateRevision: 8, PrevValue: []byte("e-v1"), PrevModRevision: 8},
		{Type: storage.EventPut, Key: key("f"), Value: []byte("f-v1"), Revision: 10, CreateRevision: 10},
		{Type: storage.EventDelete, Key: key("f"), Revision: 11, CreateRevision: 10, PrevValue: []byte("f-v1"), PrevModRevision: 10},
	}
	for _, we := range want {
		ev := <-w.Events()
		if ev.Type != we.Type || ev.Key != we.Key || ev.Revision != we.Revision || ev.CreateRevision != we.CreateRevision || ev.PrevModRevision != we.PrevModRevision ||
			!bytes.Equal(ev.Value, we.Value) || !bytes.Equal(ev.PrevValue, we.PrevValue) {
			t.Fatalf("replayed %+v, want %+v", ev, we)
		}
	}
	w.Stop()

	// A write on top, then compaction past everything: only each live
	// key's latest write is left in history, and no retire records.
	rev, err := s.Update(ctx, key("a"), []byte("a-v3"), 4)
	if err != nil || rev != 12 {
		t.Fatalf("Update: %d, %v", rev, err)
	}
	live[0] = storage.KeyValue{Key: key("a"), Value: []byte("a-v3"), ModRevision: 12, CreateRevision: 1}
	if err := s.Compact(ctx, 12); err != nil {
		t.Fatal(err)
	}
	checkReads(live)
	// The upgrade checkpointed the key index at 11; the key log holds
	// the write since.
	if got := rawKeys(t, s); got != "h5 h6 h9 h12 x12" {
		t.Fatalf("records left: %q, want the history of d, b, e, a and the key log of a", got)
	}
	if format, err := readMeta(s.db, metaFormatKey); err != nil || format != formatCurrent {
		t.Fatalf("format %d, %v", format, err)
	}
}

// rawKeys lists the store's history, retire, key-log, index and latest
// records, as "h<rev>", "r<rev>", "x<rev>", "i<key>" and "k<key>".
func rawKeys(t *testing.T, s *Store) string {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{historyPrefix}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		switch k[0] {
		case historyPrefix, retirePrefix, keyLogPrefix:
			out = append(out, string(k[0])+strconv.FormatUint(binary.BigEndian.Uint64(k[1:9]), 10))
		case latestPrefix, indexPrefix:
			out = append(out, string(k))
		}
	}
	return strings.Join(out, " ")
}

// TestUpgradeRepairsHistory: format 1 served reads from the latest record,
// so a damaged history record of a live key's latest write went unseen; the
// upgrade rewrites it from the intact latest record instead of deleting the
// only good copy.
func TestUpgradeRepairsHistory(t *testing.T) {
	dir := copyTestdata(t, "format1")
	rewrite(t, dir, historyKey(9), flipLast) // e's update to "e-v2"
	s := openTest(t, Options{Dir: dir})
	ctx := context.Background()
	kv, err := s.Get(ctx, "/registry/configmaps/default/e")
	if err != nil || string(kv.Value) != "e-v2" || kv.ModRevision != 9 || kv.CreateRevision != 8 {
		t.Fatalf("Get e: %q@%d/%d, %v; want e-v2@9/8", kv.Value, kv.ModRevision, kv.CreateRevision, err)
	}
	// Replayed, the rewritten write has lost its previous value, as writes
	// from before previous values were recorded.
	w, err := s.Watch(ctx, "/registry/", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := <-w.Events(); ev.Revision != 9 || string(ev.Value) != "e-v2" || ev.PrevValue != nil {
		t.Fatalf("replayed %+v, want e-v2 at 9 without a previous value", ev)
	}
	// Its retire record was still written: compaction leaves e's
	// creation no more than the other obsolete history.
	if err := s.Compact(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, s); got != "h4 h5 h6 h9" {
		t.Fatalf("records left: %q", got)
	}
}

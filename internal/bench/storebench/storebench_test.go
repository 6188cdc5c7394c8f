package storebench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

func TestRunSmall(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Dir: dir, Writers: 8, ObjectSize: 100, Count: 300, Preload: 200, PreloadWriters: 16, Reads: 100, Reopen: true, ListAll: true, KeepHistory: 10}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Writes != 300 || res.Preloaded != 200 || res.Reads != 100 || res.ObjectsAtMeasure != 200 || res.ListObjects != 500 {
		t.Fatalf("counts: %+v", res)
	}
	if res.WritesPerSec <= 0 || res.WriteP50 <= 0 || res.WriteP99 < res.WriteP50 || res.WriteMax < res.WriteP99 || res.ReopenTime <= 0 || res.ListTime <= 0 || res.DiskBytes <= 0 {
		t.Fatalf("implausible measurements: %+v", res)
	}
	var out bytes.Buffer
	if err := res.Write(&out); err != nil || !strings.Contains(out.String(), "writes/s") || !strings.Contains(out.String(), "500 objects") {
		t.Fatalf("report %q, %v", out.String(), err)
	}
	// A second run on the same Dir grows the store instead of colliding.
	res, err = Run(context.Background(), Config{Dir: dir, Writers: 4, Count: 50, Reads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsAtMeasure < 500 {
		t.Fatalf("second run started at %d objects, want >= 500", res.ObjectsAtMeasure)
	}
}

// TestRunUpdates: in update mode the measured writes rewrite existing
// objects, so the store keeps its size and every write is a new revision.
func TestRunUpdates(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{Dir: dir, Writers: 8, ObjectSize: 100, Count: 300, Preload: 200, Updates: true, Reads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Writes != 300 || res.WriteP50 <= 0 || res.ObjectsAtMeasure != 200 {
		t.Fatalf("implausible result: %+v", res)
	}
	s, err := embedded.Open(context.Background(), embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kvs, rev, err := s.List(context.Background(), "/registry/pods/")
	if err != nil {
		t.Fatal(err)
	}
	updated := 0
	for _, kv := range kvs {
		if kv.ModRevision != kv.CreateRevision {
			updated++
		}
	}
	if len(kvs) != 200 || rev != 500 || updated == 0 {
		t.Fatalf("after 200 creates and 300 updates: %d objects (%d updated), revision %d; want 200, some, 500", len(kvs), updated, rev)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Updates with another object size: the stored values are not the
	// ones the bench would write now, and each update must still pass the
	// value it replaces (the event's PrevValue), as the API server does.
	// The store is at revision 500 with 200 objects; the sample covers
	// every number, so the count is exact.
	res, err = Run(context.Background(), Config{Dir: dir, Writers: 8, ObjectSize: 150, Count: 300, Updates: true, Reads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsAtMeasure != 200 {
		t.Fatalf("second update run counted %d objects, want 200", res.ObjectsAtMeasure)
	}
	s, err = embedded.Open(context.Background(), embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkPrevValues(t, s, 800, 600)
	// Fewer objects than writers cannot be shared out.
	if _, err := Run(context.Background(), Config{Dir: t.TempDir(), Writers: 8, Count: 10, Preload: 4, Updates: true, Reads: -1}); err == nil {
		t.Fatal("updates of 4 objects by 8 writers ran")
	}
}

// checkPrevValues replays s's history up to revision last and checks that
// every update's PrevValue is the value its key held before it, and that
// it saw want updates.
func checkPrevValues(t *testing.T, s storage.Store, last int64, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := s.Watch(ctx, "/", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	current := map[string][]byte{}
	updates := 0
	for ev := range w.Events() {
		if ev.Type != storage.EventPut {
			continue
		}
		if ev.CreateRevision != ev.Revision {
			updates++
			// A watch starts after a revision, so the create at
			// revision 1 is not replayed: that key's first update is
			// not checked.
			if held, ok := current[ev.Key]; ok && !bytes.Equal(ev.PrevValue, held) {
				t.Fatalf("revision %d: update of %q carries a previous value of %d bytes, not the %d it replaced", ev.Revision, ev.Key, len(ev.PrevValue), len(held))
			}
		}
		current[ev.Key] = ev.Value
		if ev.Revision == last {
			break
		}
	}
	if updates != want {
		t.Fatalf("replayed %d updates up to revision %d (watch error %v), want %d", updates, last, w.Err(), want)
	}
}

// TestRunPaced: with Rate the writes take the time the rate says (300
// writes at 1,000/s: 0.3 s), not less.
func TestRunPaced(t *testing.T) {
	res, err := Run(context.Background(), Config{Dir: t.TempDir(), Writers: 8, ObjectSize: 100, Count: 300, Rate: 1000, Reads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.WriteTime < 299*time.Millisecond {
		t.Errorf("300 writes at 1,000/s took %v, want at least 0.3 s", res.WriteTime)
	}
	if res.WriteP50 <= 0 || res.WriteP99 < res.WriteP50 {
		t.Errorf("implausible latencies: %+v", res)
	}
}

func TestPercentiles(t *testing.T) {
	var lat []time.Duration
	for i := 1000; i >= 1; i-- {
		lat = append(lat, time.Duration(i))
	}
	p50, p99, p999, mx := percentiles(lat)
	if p50 != 500 || p99 != 990 || p999 != 999 || mx != 1000 {
		t.Fatalf("p50 %d p99 %d p99.9 %d max %d", p50, p99, p999, mx)
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Config{Count: 10}); err == nil {
		t.Fatal("Run with a cancelled context succeeded")
	}
}

// TestRunUpdateSet: with UpdateSet the updates touch only the first
// objects, and the result counts both the store and the set.
func TestRunUpdateSet(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), Config{Dir: dir, Writers: 8, ObjectSize: 100, Count: 300, Preload: 200, Updates: true, UpdateSet: 40, Reads: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.ObjectsAtMeasure != 200 || res.UpdateSet != 40 {
		t.Fatalf("counted %d objects and a set of %d, want 200 and 40", res.ObjectsAtMeasure, res.UpdateSet)
	}
	inSet := map[string]bool{}
	for i := range 40 {
		inSet[Key(i)] = true
	}
	s, err := embedded.Open(context.Background(), embedded.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kvs, _, err := s.List(context.Background(), "/registry/pods/")
	if err != nil {
		t.Fatal(err)
	}
	updated := 0
	for _, kv := range kvs {
		if kv.ModRevision == kv.CreateRevision {
			continue
		}
		updated++
		if !inSet[kv.Key] {
			t.Fatalf("%s was updated; it is not among the first 40 objects", kv.Key)
		}
	}
	if updated == 0 {
		t.Fatal("no object was updated")
	}
}

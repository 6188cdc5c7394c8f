package embedded

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// TestCheckpoint writes checkpoints while writers create, update and
// delete keys, then reopens the store: the index rebuilt from the last
// checkpoint and the key log after it must match the store before, and
// the key log the checkpoint covers must be gone.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	// CheckpointWrites 1: the background checkpointer runs too, whenever
	// the log holds as many writes as there are keys.
	s := openTest(t, Options{Dir: dir, CheckpointWrites: 1})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 400 {
				key := fmt.Sprintf("/registry/pods/ns%d/p%d", g, rng.IntN(50))
				kv, err := s.Get(ctx, key)
				switch {
				case err != nil:
					_, err = s.Create(ctx, key, []byte(key))
				case rng.IntN(4) == 0:
					_, _, err = s.Delete(ctx, key, kv.ModRevision)
				default:
					_, err = s.Update(ctx, key, []byte(fmt.Sprint(rng.Uint64())), kv.ModRevision)
				}
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 5 {
		if err := s.read(ctx, func() error { return s.checkpoint(ctx) }); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if err := s.read(ctx, func() error { return s.checkpoint(ctx) }); err != nil {
		t.Fatal(err)
	}
	ckpt := s.checkpointRev.Load()
	// A few writes after the last checkpoint, for the key log to carry.
	if _, err := s.Create(ctx, "/registry/pods/late/a", []byte("a")); err != nil {
		t.Fatal(err)
	}
	before, rev, err := s.List(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	if n := countRecords(t, s.db, keyLogPrefix); n != int(rev-ckpt) {
		t.Fatalf("%d key-log records after the checkpoint at %d, current revision %d", n, ckpt, rev)
	}
	s.Close()

	s = openTest(t, Options{Dir: dir})
	after, rev2, err := s.List(ctx, "/")
	if err != nil || rev2 != rev || len(after) != len(before) {
		t.Fatalf("after reopening: %d keys at %d (%v), want %d at %d", len(after), rev2, err, len(before), rev)
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.Key != b.Key || a.ModRevision != b.ModRevision || a.CreateRevision != b.CreateRevision || string(a.Value) != string(b.Value) {
			t.Fatalf("after reopening: %q@%d/%d, want %q@%d/%d", a.Key, a.ModRevision, a.CreateRevision, b.Key, b.ModRevision, b.CreateRevision)
		}
	}
	if n := countRecords(t, s.db, checkpointPrefix); n != len(before)-1 {
		t.Fatalf("%d checkpoint records, want %d", n, len(before)-1)
	}
}

// TestCheckpointCorrupt: a damaged checkpoint record's key is recovered
// from history.
func TestCheckpointCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	rev, err := s.Create(ctx, "/ns/victim", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if rev, err = s.Update(ctx, "/ns/victim", []byte("v2"), rev); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/ns/other", []byte("o")); err != nil {
		t.Fatal(err)
	}
	if err := s.read(ctx, func() error { return s.checkpoint(ctx) }); err != nil {
		t.Fatal(err)
	}
	ckpt := s.checkpointRev.Load()
	s.Close()
	rewrite(t, dir, checkpointKey(ckpt, []byte("/ns/victim")), flipLast)
	s = openTest(t, Options{Dir: dir})
	if kv, err := s.Get(ctx, "/ns/victim"); err != nil || string(kv.Value) != "v2" || kv.ModRevision != rev {
		t.Fatalf("Get: %q@%d, %v; want v2@%d", kv.Value, kv.ModRevision, err, rev)
	}
	if kv, err := s.Get(ctx, "/ns/other"); err != nil || string(kv.Value) != "o" {
		t.Fatalf("Get other: %q, %v", kv.Value, err)
	}
}

func countRecords(t *testing.T, r pebble.Reader, prefix byte) int {
	t.Helper()
	n := 0
	if err := scanRecords(r, []byte{prefix}, []byte{prefix + 1}, func(_, _ []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIndexCopyMerge: merging sorted runs yields every key once, in order,
// with its own revisions.
func TestIndexCopyMerge(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 64} {
		rng := rand.New(rand.NewPCG(uint64(n), 2))
		var (
			runs     []*indexRun
			want     []string
			wantMods = map[string]int64{}
		)
		for range n {
			r := newIndexRun()
			for range 1 + rng.IntN(50) {
				key := fmt.Sprintf("/k/%08d/%d", rng.IntN(1e8), len(want))
				want = append(want, key)
				wantMods[key] = int64(len(want))
				r.add([]byte(key), keyMeta{mod: int64(len(want))})
			}
			r.sort(newSlicePacer(0))
			runs = append(runs, r)
		}
		var got []string
		mods := map[string]int64{}
		if err := mergeRuns(runs, func(key []byte, m keyMeta) error {
			got = append(got, string(key))
			mods[string(key)] = m.mod
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%d runs: merged %d keys, not the sorted input (%d keys)", n, len(got), len(want))
		}
		if !maps.Equal(mods, wantMods) {
			t.Fatalf("%d runs: merged keys lost their revisions", n)
		}
	}
}

// TestSlicePacer: a slice of work is followed by a pause of yield times
// its length; short slices and a non-positive yield add none.
func TestSlicePacer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		yield     float64
		work      time.Duration
		wantPause bool
	}{
		{"a full slice pauses", 3, 2 * time.Millisecond, true},
		{"a short slice does not", 3, 0, false},
		{"no yield, no pause", 0, 2 * time.Millisecond, false},
		{"negative yield, no pause", -1, 2 * time.Millisecond, false},
		{"a long slice pauses at most the cap", 3, time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slept []time.Duration
			p := newSlicePacer(tc.yield)
			p.sleep = func(d time.Duration) { slept = append(slept, d) }
			p.start = time.Now().Add(-tc.work)
			for range 64 {
				p.step()
			}
			if !tc.wantPause {
				if len(slept) != 0 {
					t.Fatalf("paused %v", slept)
				}
				return
			}
			want := min(time.Duration(tc.yield*float64(tc.work)), maxCompactionYield)
			if len(slept) != 1 || slept[0] < want || slept[0] > maxCompactionYield {
				t.Fatalf("paused %v, want one pause of %v to %v", slept, want, maxCompactionYield)
			}
		})
	}
}

// TestCheckpointTmpRemoved: the sstable of a checkpoint that a crash
// interrupted before its ingestion is removed at the next Open.
func TestCheckpointTmpRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, Options{Dir: dir})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "checkpoint-42"+checkpointTmpSuffix)
	other := filepath.Join(dir, "notes.txt")
	for _, f := range []string{stray, other} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openTest(t, Options{Dir: dir})
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("interrupted checkpoint's table after Open: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another file after Open: %v", err)
	}
}

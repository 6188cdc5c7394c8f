package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/myriad-k8s/myriad/internal/storage"
)

const testWait = 20 * time.Second

func TestOptionsValidation(t *testing.T) {
	if _, err := Open(context.Background(), Options{}); err == nil {
		t.Fatal("Open without Dir succeeded")
	}
	if _, err := Open(context.Background(), Options{Dir: t.TempDir(), WatchBuffer: -1}); err == nil {
		t.Fatal("Open with negative WatchBuffer succeeded")
	}
	if _, err := Open(context.Background(), Options{Dir: t.TempDir(), CompactionYield: math.NaN()}); err == nil {
		t.Fatal("Open with CompactionYield NaN succeeded")
	}
	o, err := Options{Dir: "x"}.withDefaults()
	if err != nil || o.MaxBatchOps != 1024 || o.WatchBuffer != 4096 || o.CompactionYield != 3 || o.FS == nil || o.Logger == nil {
		t.Fatalf("defaults not applied: %+v, %v", o, err)
	}
}

// TestL0CompactionThreshold checks that the threshold (and the write stall
// derived from it) reaches Pebble, as recorded in the OPTIONS file it
// writes at Open.
func TestL0CompactionThreshold(t *testing.T) {
	for _, tc := range []struct {
		set, want int
	}{{0, 16}, {6, 6}} {
		dir := t.TempDir()
		s := openTest(t, Options{Dir: dir, L0CompactionThreshold: tc.set})
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		files, err := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Pebble OPTIONS file in %s: %v", dir, err)
		}
		text, err := os.ReadFile(files[len(files)-1])
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range []string{
			fmt.Sprintf("l0_compaction_threshold=%d\n", tc.want),
			fmt.Sprintf("l0_stop_writes_threshold=%d\n", 4*tc.want),
		} {
			if !strings.Contains(string(text), line) {
				t.Errorf("L0CompactionThreshold %d: Pebble options lack %q", tc.set, line)
			}
		}
	}
	if _, err := Open(context.Background(), Options{Dir: t.TempDir(), L0CompactionThreshold: -1}); err == nil {
		t.Fatal("Open with negative L0CompactionThreshold succeeded")
	}
}

// TestReopen checks that data, the revision counter and the compacted
// revision survive a clean close.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for i := range 10 {
		if last, err = s.Create(ctx, fmt.Sprintf("/k%d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(ctx, last-3); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, Options{Dir: dir})
	if rev, _ := s.CurrentRevision(ctx); rev != last {
		t.Fatalf("CurrentRevision after reopen = %d, want %d", rev, last)
	}
	if comp, _ := s.CompactedRevision(ctx); comp != last-3 {
		t.Fatalf("CompactedRevision after reopen = %d, want %d", comp, last-3)
	}
	if _, err := s.Watch(ctx, "/", last-4); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch below compaction after reopen: %v", err)
	}
	// History after the compacted revision is replayed from disk (the ring
	// starts empty after a reopen).
	w, err := s.Watch(ctx, "/", last-3)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := 7; i < 10; i++ {
		ev := <-w.Events()
		if ev.Key != fmt.Sprintf("/k%d", i) || ev.Revision != last-int64(9-i) {
			t.Fatalf("replayed %q at %d", ev.Key, ev.Revision)
		}
	}
	rev, err := s.Create(ctx, "/after", nil)
	if err != nil || rev != last+1 {
		t.Fatalf("first write after reopen got revision %d (%v), want %d", rev, err, last+1)
	}
}

// TestBatchPreconditions drives one group-commit batch directly: later ops
// must see earlier ones, and failed ops consume no revision.
func TestBatchPreconditions(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	base, _ := s.CurrentRevision(ctx)
	mk := func(kind opKind, key string, expected int64) *writeOp {
		return &writeOp{ctx: ctx, kind: kind, key: key, value: []byte(key), expected: expected, done: make(chan writeResult, 1)}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ops := []*writeOp{
		mk(opCreate, "/a", 0),       // base+1
		mk(opCreate, "/a", 0),       // exists (sees op 0)
		mk(opUpdate, "/a", base+1),  // base+2 (sees op 0's revision)
		mk(opUpdate, "/a", base+1),  // conflict: current is base+2
		mk(opDelete, "/missing", 0), // not found
		mk(opCreate, "/b", 0),       // base+3
		mk(opDelete, "/b", base+3),  // base+4
		{ctx: cancelled, kind: opCreate, key: "/c", done: make(chan writeResult, 1)},
	}
	commitDirect(s, ops)
	want := []struct {
		rev int64
		err error
	}{{base + 1, nil}, {0, storage.ErrExists}, {base + 2, nil}, {0, storage.ErrConflict}, {0, storage.ErrNotFound}, {base + 3, nil}, {base + 4, nil}, {0, context.Canceled}}
	for i, op := range ops {
		r := <-op.done
		if r.rev != want[i].rev || !errors.Is(r.err, want[i].err) || (want[i].err == nil) != (r.err == nil) {
			t.Errorf("op %d: rev %d err %v, want rev %d err %v", i, r.rev, r.err, want[i].rev, want[i].err)
		}
	}
	if rev, _ := s.CurrentRevision(ctx); rev != base+4 {
		t.Fatalf("CurrentRevision %d, want %d", rev, base+4)
	}
}

// commitDirect stages ops as one batch and finishes it, as the writer and
// syncer goroutines would (both are idle while a test calls this).
func commitDirect(s *Store, batches ...[]*writeOp) {
	staged := make(chan *stagedBatch, len(batches))
	for _, ops := range batches {
		staged <- s.stage(ops)
	}
	close(staged)
	done := make(chan struct{})
	s.runSyncer(staged, done)
	<-done
}

// TestPipelinedBatches stages a second batch before the first is finished,
// as the writer does while the syncer waits for the first one's fsync: the
// second sees the first's writes and continues its revisions.
func TestPipelinedBatches(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	base, _ := s.CurrentRevision(ctx)
	mk := func(kind opKind, key string, expected int64) *writeOp {
		return &writeOp{ctx: ctx, kind: kind, key: key, value: []byte(key), expected: expected, done: make(chan writeResult, 1)}
	}
	first := []*writeOp{mk(opCreate, "/a", 0), mk(opCreate, "/b", 0)}
	second := []*writeOp{mk(opCreate, "/a", 0), mk(opUpdate, "/b", base+2), mk(opCreate, "/c", 0)}
	commitDirect(s, first, second)
	want := []struct {
		rev int64
		err error
	}{{base + 1, nil}, {base + 2, nil}, {0, storage.ErrExists}, {base + 3, nil}, {base + 4, nil}}
	for i, op := range append(first, second...) {
		r := <-op.done
		if r.rev != want[i].rev || !errors.Is(r.err, want[i].err) || (want[i].err == nil) != (r.err == nil) {
			t.Errorf("op %d: rev %d err %v, want rev %d err %v", i, r.rev, r.err, want[i].rev, want[i].err)
		}
	}
	if rev, _ := s.CurrentRevision(ctx); rev != base+4 {
		t.Fatalf("CurrentRevision %d, want %d", rev, base+4)
	}
	if kv, err := s.Get(ctx, "/b"); err != nil || kv.ModRevision != base+3 {
		t.Fatalf("Get /b: %+v, %v; want ModRevision %d", kv, err, base+3)
	}
}

// TestSlowWatcherEnded: a watcher that never reads is ended with
// ErrWatcherTooSlow while writes and another watcher proceed unhindered.
func TestSlowWatcherEnded(t *testing.T) {
	s := openTest(t, Options{WatchBuffer: 4})
	ctx := context.Background()
	slow, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// Write in lockstep with the fast watcher, so it is never more than one
	// event behind while the slow one never reads.
	const n = 200
	for i := range n {
		rev, err := s.Create(ctx, fmt.Sprintf("/k%d", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		select {
		case ev, ok := <-fast.Events():
			if !ok || ev.Revision != rev {
				t.Fatalf("fast watcher: event %+v (open %v, err %v), want revision %d", ev, ok, fast.Err(), rev)
			}
		case <-time.After(testWait):
			t.Fatal("fast watcher stalled")
		}
	}
	// The slow watcher holds its buffered events, then ends with the error.
	received := 0
	deadline := time.After(testWait)
	for open := true; open; {
		select {
		case _, open = <-slow.Events():
			if open {
				received++
			}
		case <-deadline:
			t.Fatal("slow watcher was not ended")
		}
	}
	if !errors.Is(slow.Err(), ErrWatcherTooSlow) {
		t.Fatalf("slow watcher Err = %v, want ErrWatcherTooSlow", slow.Err())
	}
	if received > 4+1 {
		t.Fatalf("slow watcher received %d events; a buffer of 4 holds 4 and the one in hand", received)
	}
}

// TestWatchHandsOverBatches: a watcher's goroutine hands live events to
// its consumer ahead of the consumer's reads, so a burst costs the
// consumer one wake-up, not two goroutine switches per event (which on a
// saturated CPU left the watch cache hundreds of milliseconds behind its
// store). The events then arrive in order.
func TestWatchHandsOverBatches(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 50
	var revs []int64
	for i := range n {
		rev, err := s.Create(ctx, fmt.Sprintf("/k%d", i), []byte("v"))
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	deadline := time.Now().Add(testWait)
	for len(w.Events()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events handed over before the consumer read", len(w.Events()), n)
		}
		time.Sleep(time.Millisecond)
	}
	for i, want := range revs {
		if ev := <-w.Events(); ev.Revision != want {
			t.Fatalf("event %d: revision %d, want %d", i, ev.Revision, want)
		}
	}
}

// TestCompactionDuringReplay: history compacted away while a watch is still
// replaying it ends the watch with ErrCompacted rather than skipping events.
// The history is longer than the events a watcher hands over ahead of its
// consumer, so the replay is still reading when the compaction comes.
func TestCompactionDuringReplay(t *testing.T) {
	s := openTest(t, Options{WatchRingEvents: 2, ReplayChunk: 2})
	ctx := context.Background()
	var last int64
	for i := range outBuffer + 20 {
		var err error
		if last, err = s.Create(ctx, fmt.Sprintf("/k%03d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Watch(ctx, "/", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := <-w.Events(); ev.Revision != 2 {
		t.Fatalf("first replayed revision %d, want 2", ev.Revision)
	}
	if err := s.Compact(ctx, last-1); err != nil {
		t.Fatal(err)
	}
	prev := int64(2)
	for ev := range w.Events() {
		if ev.Revision != prev+1 {
			t.Fatalf("gap: revision %d after %d", ev.Revision, prev)
		}
		prev = ev.Revision
	}
	if !errors.Is(w.Err(), storage.ErrCompacted) {
		t.Fatalf("Err = %v, want ErrCompacted", w.Err())
	}
}

// TestCloseWithPendingWrites: writes racing with Close either commit (and
// are durable) or fail with ErrClosed; nothing hangs.
func TestCloseWithPendingWrites(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ok  = map[string]int64{}
		bad []error
	)
	started := make(chan struct{}, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("/k/%d/%d", g, i)
				rev, err := s.Create(ctx, key, []byte(key))
				if i == 0 {
					started <- struct{}{}
				}
				mu.Lock()
				if err != nil {
					if !errors.Is(err, storage.ErrClosed) {
						bad = append(bad, err)
					}
					mu.Unlock()
					return
				}
				ok[key] = rev
				mu.Unlock()
			}
		}()
	}
	for range 16 {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Fatalf("writes failed with something other than ErrClosed: %v", bad)
	}
	s = openTest(t, Options{Dir: dir})
	for key, rev := range ok {
		kv, err := s.Get(ctx, key)
		if err != nil || kv.ModRevision != rev {
			t.Fatalf("acknowledged %q@%d: got %d, %v", key, rev, kv.ModRevision, err)
		}
	}
}

// TestUpdateFrom: an update given the value it replaces puts that value in
// the event (a replay reads the same from history), and fails with a
// conflict, like Update, when the given revision is no longer the key's.
func TestUpdateFrom(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	rev1, err := s.Create(ctx, "/k", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/", rev1)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	rev2, err := s.UpdateFrom(ctx, "/k", []byte("v2"), storage.KeyValue{Key: "/k", Value: []byte("v1"), ModRevision: rev1})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.Events()
	if ev.Revision != rev2 || string(ev.Value) != "v2" || string(ev.PrevValue) != "v1" || ev.PrevModRevision != rev1 {
		t.Errorf("event %+v, want v2 at %d replacing v1 at %d", ev, rev2, rev1)
	}
	if _, err := s.UpdateFrom(ctx, "/k", []byte("v3"), storage.KeyValue{Key: "/k", Value: []byte("v1"), ModRevision: rev1}); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("update from a stale revision: %v, want a conflict", err)
	}
	// History replay (a watch from before the update) has the same
	// previous value.
	h, err := s.Watch(ctx, "/", rev1)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if ev := <-h.Events(); string(ev.PrevValue) != "v1" || ev.PrevModRevision != rev1 {
		t.Errorf("replayed event %+v, want previous v1 at %d", ev, rev1)
	}
}

// TestCompactKeepsLiveValues: compaction deletes the history that later
// writes made obsolete and keeps each live key's latest write, which holds
// its value. (The key log goes with checkpoints, not compactions.)
func TestCompactKeepsLiveValues(t *testing.T) {
	for _, chunk := range []int{0, 1} {
		t.Run(fmt.Sprintf("chunk=%d", chunk), func(t *testing.T) {
			testCompactKeepsLiveValues(t, openTest(t, Options{CompactChunk: chunk, RetireInterval: -1}))
		})
	}
}

func testCompactKeepsLiveValues(t *testing.T, s *Store) {
	ctx := context.Background()
	mustWrite := func(rev int64, err error) int64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	a := mustWrite(s.Create(ctx, "/a", []byte("a1")))
	b := mustWrite(s.Create(ctx, "/b", []byte("b1")))
	mustWrite(s.Update(ctx, "/a", []byte("a2"), a))
	_, rev, err := s.Delete(ctx, "/b", b)
	mustWrite(rev, err)
	c := mustWrite(s.Create(ctx, "/c", []byte("c1")))
	for _, step := range []struct {
		compact int64
		write   func()
		want    string
	}{
		{compact: 4, want: "h3 h5 x1 x2 x3 x4 x5"},
		{compact: 5, want: "h3 h5 x1 x2 x3 x4 x5"},
		{write: func() { mustWrite(s.Update(ctx, "/c", []byte("c2"), c)) }, compact: 6, want: "h3 h6 x1 x2 x3 x4 x5 x6"},
	} {
		if step.write != nil {
			step.write()
		}
		if err := s.Compact(ctx, step.compact); err != nil {
			t.Fatal(err)
		}
		if got := rawKeys(t, s); got != step.want {
			t.Fatalf("after compacting to %d: records %q, want %q", step.compact, got, step.want)
		}
		if kv, err := s.Get(ctx, "/a"); err != nil || string(kv.Value) != "a2" {
			t.Fatalf("Get /a after compacting to %d: %q, %v", step.compact, kv.Value, err)
		}
		list, _, err := s.List(ctx, "/")
		if err != nil || len(list) != 2 {
			t.Fatalf("List after compacting to %d: %d keys, %v", step.compact, len(list), err)
		}
	}
	if _, err := s.Watch(ctx, "/", 5); !errors.As(err, new(*storage.CompactedError)) {
		t.Fatalf("watch from below the compacted revision: %v", err)
	}
}

// TestCompactResumes: history left behind by a compaction that stopped
// after recording its revision (a crash, a cancelled context) goes with the
// next compaction.
func TestCompactResumes(t *testing.T) {
	s := openTest(t, Options{})
	ctx := context.Background()
	a, err := s.Create(ctx, "/a", []byte("a1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/a", []byte("a2"), a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/b", nil); err != nil {
		t.Fatal(err)
	}
	// What Compact(2) leaves if it stops right after its first batch.
	b := s.db.NewBatch()
	if err := b.Set([]byte(metaCompactedKey), encodeMeta(metaCompactedKey, 2), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.commitSynced(b); err != nil {
		t.Fatal(err)
	}
	b.Close()
	s.compacted.Store(2)
	if got := rawKeys(t, s); got != "h1 h2 h3 r2 x1 x2 x3" {
		t.Fatalf("records after the interrupted compaction: %q", got)
	}
	if err := s.Compact(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, s); got != "h2 h3 x1 x2 x3" {
		t.Fatalf("records after the next compaction: %q, want h2 h3 x1 x2 x3", got)
	}
}

// TestCompactRetireInterval: a compaction sooner than RetireInterval after
// the last deletion round records its revision (watchers see it at once)
// but leaves the deleting to a later compaction, which catches up.
func TestCompactRetireInterval(t *testing.T) {
	s := openTest(t, Options{RetireInterval: time.Hour})
	ctx := context.Background()
	a, err := s.Create(ctx, "/a", []byte("a1"))
	if err != nil {
		t.Fatal(err)
	}
	a, err = s.Update(ctx, "/a", []byte("a2"), a)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, a); err != nil { // the first compaction deletes
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "/a", []byte("a3"), a); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, s); got != "h2 h3 r3 x1 x2 x3" {
		t.Fatalf("records after a compaction within the interval: %q, want h2 h3 r3 x1 x2 x3", got)
	}
	if _, err := s.Watch(ctx, "/", 2); !errors.As(err, new(*storage.CompactedError)) {
		t.Fatalf("watch from below the compacted revision: %v", err)
	}
	s.compactMu.Lock()
	s.lastRetire = time.Time{} // the interval has passed
	s.compactMu.Unlock()
	if err := s.Compact(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if got := rawKeys(t, s); got != "h3 x1 x2 x3" {
		t.Fatalf("records after the interval: %q, want h3 x1 x2 x3", got)
	}
}

// rawKeys lists the store's history, retire and key-log records, as
// "h<rev>", "r<rev>" and "x<rev>".
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
		}
	}
	return strings.Join(out, " ")
}

package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

func testWatchOrdering(t *testing.T, s storage.Store) {
	w := mustWatch(t, s, "/", 0)
	r1 := mustCreate(t, s, "/a", "1")
	r2 := mustUpdate(t, s, "/a", "2", r1)
	r3 := mustCreate(t, s, "/b", "x")
	_, r4, err := s.Delete(testCtx(t), "/a", r2)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	ev := expectEvent(t, w, storage.EventPut, "/a", "1", r1)
	if ev.CreateRevision != r1 {
		t.Fatalf("create event CreateRevision %d, want %d", ev.CreateRevision, r1)
	}
	ev = expectEvent(t, w, storage.EventPut, "/a", "2", r2)
	if ev.CreateRevision != r1 {
		t.Fatalf("update event CreateRevision %d, want %d", ev.CreateRevision, r1)
	}
	expectEvent(t, w, storage.EventPut, "/b", "x", r3)
	expectEvent(t, w, storage.EventDelete, "/a", "", r4)
	expectQuiet(t, w, r4)
}

func testWatchPrefixFilter(t *testing.T, s storage.Store) {
	w := mustWatch(t, s, "/a/", 0)
	mustCreate(t, s, "/ab/x", "no")
	mustCreate(t, s, "/a", "no")
	r := mustCreate(t, s, "/a/x", "yes")
	last := mustCreate(t, s, "/b/x", "no")
	expectEvent(t, w, storage.EventPut, "/a/x", "yes", r)
	expectQuiet(t, w, last)
}

func testWatchFromOldRevision(t *testing.T, s storage.Store) {
	var revs []int64
	for i := range 6 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("/k%d", i), fmt.Sprint(i)))
	}
	// From revs[2]: exactly the writes after it.
	w := mustWatch(t, s, "/", revs[2])
	for i := 3; i < 6; i++ {
		expectEvent(t, w, storage.EventPut, fmt.Sprintf("/k%d", i), fmt.Sprint(i), revs[i])
	}
	expectQuiet(t, w, revs[5])
	// From the very first revision minus one: everything.
	w = mustWatch(t, s, "/", revs[0]-1)
	if revs[0]-1 == 0 {
		// 0 means "from now"; nothing before is replayed.
		expectQuiet(t, w, revs[5])
		return
	}
	for i := range 6 {
		expectEvent(t, w, storage.EventPut, fmt.Sprintf("/k%d", i), fmt.Sprint(i), revs[i])
	}
}

// testWatchFromOldThenLive checks the handoff from history to live events:
// writes keep arriving while the watch replays, and every one must appear
// once, in order.
func testWatchFromOldThenLive(t *testing.T, s storage.Store) {
	const before, during = 300, 300
	start := mustCreate(t, s, "/start", "")
	for i := range before {
		mustCreate(t, s, fmt.Sprintf("/old/%04d", i), "v")
	}
	w := mustWatch(t, s, "/", start)
	errc := make(chan error, 1)
	go func() {
		for i := range during {
			if _, err := s.Create(context.Background(), fmt.Sprintf("/new/%04d", i), []byte("v")); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	last := start
	for i := range before + during {
		ev := next(t, w)
		if ev.Type != storage.EventPut || ev.Revision <= last {
			t.Fatalf("event %d: %v %q rev=%d after rev %d", i, ev.Type, ev.Key, ev.Revision, last)
		}
		want := fmt.Sprintf("/old/%04d", i)
		if i >= before {
			want = fmt.Sprintf("/new/%04d", i-before)
		}
		if ev.Key != want {
			t.Fatalf("event %d is %q, want %q (gap or reordering)", i, ev.Key, want)
		}
		last = ev.Revision
	}
	if err := <-errc; err != nil {
		t.Fatalf("writer: %v", err)
	}
	expectQuiet(t, w, last)
}

func testWatchAfterCompaction(t *testing.T, s storage.Store) {
	var revs []int64
	for i := range 5 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("/k%d", i), "v"))
	}
	ctx := testCtx(t)
	if err := s.Compact(ctx, revs[2]); err != nil {
		t.Fatalf("Compact(%d): %v", revs[2], err)
	}
	if got, err := s.CompactedRevision(ctx); err != nil || got != revs[2] {
		t.Fatalf("CompactedRevision = %d, %v; want %d", got, err, revs[2])
	}
	_, err := s.Watch(ctx, "/", revs[1])
	expectErr(t, err, storage.ErrCompacted)
	var ce *storage.CompactedError
	if !errors.As(err, &ce) || ce.Requested != revs[1] || ce.Compacted != revs[2] {
		t.Fatalf("watch from compacted revision: %v, want *storage.CompactedError{Requested %d, Compacted %d}", err, revs[1], revs[2])
	}
	// Watching from the compacted revision itself is allowed: the history
	// after it is intact.
	w := mustWatch(t, s, "/", revs[2])
	expectEvent(t, w, storage.EventPut, "/k3", "v", revs[3])
	expectEvent(t, w, storage.EventPut, "/k4", "v", revs[4])
	// Data survives compaction; only history goes.
	for i := range 5 {
		mustGet(t, s, fmt.Sprintf("/k%d", i))
	}
}

func testCompactRules(t *testing.T, s storage.Store) {
	ctx := testCtx(t)
	r1 := mustCreate(t, s, "/a", "1")
	r2 := mustCreate(t, s, "/b", "2")
	if err := s.Compact(ctx, r2+1000); err == nil {
		t.Fatalf("Compact beyond the current revision succeeded")
	}
	if err := s.Compact(ctx, r2); err != nil {
		t.Fatalf("Compact(%d): %v", r2, err)
	}
	if err := s.Compact(ctx, r1); err != nil {
		t.Fatalf("Compact to an older revision should be a no-op, got %v", err)
	}
	if err := s.Compact(ctx, r2); err != nil {
		t.Fatalf("repeated Compact should be a no-op, got %v", err)
	}
	if got, _ := s.CompactedRevision(ctx); got != r2 {
		t.Fatalf("CompactedRevision = %d after compacting to %d", got, r2)
	}
	// Writes continue after compaction, and watches from "now" work.
	w := mustWatch(t, s, "/", 0)
	r3 := mustCreate(t, s, "/c", "3")
	expectEvent(t, w, storage.EventPut, "/c", "3", r3)
}

func testRequestProgress(t *testing.T, s storage.Store) {
	w := mustWatch(t, s, "/quiet/", 0)
	var last int64
	for i := range 3 {
		last = mustCreate(t, s, fmt.Sprintf("/busy/%d", i), "v")
	}
	// The watch's own keys are quiet; progress must still reach last.
	expectQuiet(t, w, last)
	// Twice in a row works too.
	expectQuiet(t, w, last)
}

// testRequestProgressOrdering: a progress notification comes after every
// matching event at or below its revision.
func testRequestProgressOrdering(t *testing.T, s storage.Store) {
	w := mustWatch(t, s, "/", 0)
	var revs []int64
	for i := range 20 {
		revs = append(revs, mustCreate(t, s, fmt.Sprintf("/k%02d", i), "v"))
	}
	w.RequestProgress()
	seen := 0
	for {
		ev := next(t, w)
		if ev.Type == storage.EventProgress {
			if ev.Revision < revs[len(revs)-1] || seen != len(revs) {
				t.Fatalf("progress at %d after %d of %d events (last write %d)", ev.Revision, seen, len(revs), revs[len(revs)-1])
			}
			return
		}
		if ev.Revision != revs[seen] {
			t.Fatalf("event %d at revision %d, want %d", seen, ev.Revision, revs[seen])
		}
		seen++
	}
}

func testWatchStop(t *testing.T, s storage.Store) {
	w, err := s.Watch(testCtx(t), "/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	w.Stop()
	w.Stop() // idempotent
	waitClosed(t, w)
	if err := w.Err(); err != nil {
		t.Fatalf("Err after Stop = %v, want nil", err)
	}
	// The store is unaffected.
	mustCreate(t, s, "/k", "v")
}

func testWatchContextCancel(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	r := mustCreate(t, s, "/k", "v")
	expectEvent(t, w, storage.EventPut, "/k", "v", r)
	cancel()
	waitClosed(t, w)
	if err := w.Err(); err != nil {
		t.Fatalf("Err after ctx cancel = %v, want nil", err)
	}
}

// expectPrev checks an event's PrevValue and PrevModRevision: want nil
// means none (a create), otherwise the exact bytes (an empty previous value
// is non-nil) written at prevRev.
func expectPrev(t *testing.T, ev storage.Event, want []byte, prevRev int64) {
	t.Helper()
	if want == nil {
		if ev.PrevValue != nil || ev.PrevModRevision != 0 {
			t.Fatalf("%v %q rev=%d: PrevValue %q at %d, want nil", ev.Type, ev.Key, ev.Revision, ev.PrevValue, ev.PrevModRevision)
		}
		return
	}
	if ev.PrevValue == nil || !bytes.Equal(ev.PrevValue, want) || ev.PrevModRevision != prevRev {
		t.Fatalf("%v %q rev=%d: PrevValue %q (nil=%v) at %d, want %q at %d", ev.Type, ev.Key, ev.Revision, ev.PrevValue, ev.PrevValue == nil, ev.PrevModRevision, want, prevRev)
	}
}

// testWatchPrevValue: every event carries the value it replaced (nil for a
// create, the deleted value for a delete, a non-nil empty slice for an empty
// one), both live and replayed from history.
func testWatchPrevValue(t *testing.T, s storage.Store) {
	start := mustCreate(t, s, "/start", "")
	live := mustWatch(t, s, "/k", 0)
	r1 := mustCreate(t, s, "/k", "v1")
	r2 := mustUpdate(t, s, "/k", "v2", r1)
	r3 := mustUpdate(t, s, "/k", "", r2)
	r4 := mustUpdate(t, s, "/k", "v4", r3)
	if _, _, err := s.Delete(testCtx(t), "/k", r4); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	r6 := mustCreate(t, s, "/k", "again")
	kv, r7, err := s.Delete(testCtx(t), "/k", 0)
	if err != nil {
		t.Fatalf("unconditional Delete: %v", err)
	}
	// The deleted value returned to the caller is the caller's: changing
	// it must not change what watchers see.
	for i := range kv.Value {
		kv.Value[i] = 'X'
	}
	check := func(w storage.Watcher) {
		t.Helper()
		expectPrev(t, expectEvent(t, w, storage.EventPut, "/k", "v1", r1), nil, 0)
		expectPrev(t, expectEvent(t, w, storage.EventPut, "/k", "v2", r2), []byte("v1"), r1)
		expectPrev(t, expectEvent(t, w, storage.EventPut, "/k", "", r3), []byte("v2"), r2)
		expectPrev(t, expectEvent(t, w, storage.EventPut, "/k", "v4", r4), []byte{}, r3)
		expectPrev(t, expectEvent(t, w, storage.EventDelete, "/k", "", r4+1), []byte("v4"), r4)
		expectPrev(t, expectEvent(t, w, storage.EventPut, "/k", "again", r6), nil, 0)
		expectPrev(t, expectEvent(t, w, storage.EventDelete, "/k", "", r7), []byte("again"), r6)
		expectQuiet(t, w, r7)
	}
	check(live)
	check(mustWatch(t, s, "/k", start)) // replayed (from disk where the backend has a ring)
}

// testWatchPrevValueConcurrent: under concurrent compare-and-swap updates
// of one key, each event's PrevValue is the previous event's Value.
func testWatchPrevValueConcurrent(t *testing.T, s storage.Store) {
	r0 := mustCreate(t, s, "/ctr", "0")
	const writers, each = 4, 25
	errc := make(chan error, writers)
	for range writers {
		go func() {
			ctx := testCtx(t)
			for done := 0; done < each; {
				kv, err := s.Get(ctx, "/ctr")
				if err != nil {
					errc <- err
					return
				}
				n, _ := strconv.Atoi(string(kv.Value))
				_, err = s.Update(ctx, "/ctr", []byte(strconv.Itoa(n+1)), kv.ModRevision)
				if errors.Is(err, storage.ErrConflict) {
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				done++
			}
			errc <- nil
		}()
	}
	for range writers {
		if err := <-errc; err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	w := mustWatch(t, s, "/ctr", r0)
	prev, prevRev := "0", r0
	for i := 1; i <= writers*each; i++ {
		ev := next(t, w)
		expectPrev(t, ev, []byte(prev), prevRev)
		if want := strconv.Itoa(i); string(ev.Value) != want {
			t.Fatalf("event %d: value %q, want %q", i, ev.Value, want)
		}
		prev, prevRev = string(ev.Value), ev.Revision
	}
}

package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// testConcurrentWriters: many goroutines create keys at once. Every write
// gets its own revision (none lost, none shared), and a watch sees them all in
// revision order with the revision each writer was told.
func testConcurrentWriters(t *testing.T, s storage.Store) {
	const writers, perWriter = 16, 40
	start := mustRev(t, s)
	w := mustWatch(t, s, "/c/", 0)
	type ack struct {
		key string
		rev int64
	}
	acks := make(chan ack, writers*perWriter)
	var wg sync.WaitGroup
	errc := make(chan error, writers)
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				key := fmt.Sprintf("/c/%02d/%03d", g, i)
				rev, err := s.Create(context.Background(), key, []byte(key))
				if err != nil {
					errc <- fmt.Errorf("Create(%q): %w", key, err)
					return
				}
				acks <- ack{key, rev}
			}
		}()
	}
	wg.Wait()
	close(acks)
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	byRev := map[int64]string{}
	for a := range acks {
		if other, dup := byRev[a.rev]; dup {
			t.Fatalf("revision %d given to both %q and %q", a.rev, other, a.key)
		}
		if a.rev <= start {
			t.Fatalf("%q got revision %d, not after the starting revision %d", a.key, a.rev, start)
		}
		byRev[a.rev] = a.key
	}
	if len(byRev) != writers*perWriter {
		t.Fatalf("%d distinct revisions for %d writes", len(byRev), writers*perWriter)
	}
	last := int64(0)
	for range writers * perWriter {
		ev := next(t, w)
		if ev.Type != storage.EventPut || ev.Revision <= last || byRev[ev.Revision] != ev.Key || string(ev.Value) != ev.Key {
			t.Fatalf("event %v %q rev=%d (previous %d) does not match the acknowledged %q", ev.Type, ev.Key, ev.Revision, last, byRev[ev.Revision])
		}
		last = ev.Revision
	}
	expectQuiet(t, w, last)
	if cur := mustRev(t, s); cur < last {
		t.Fatalf("CurrentRevision %d behind the last write %d", cur, last)
	}
}

// testConcurrentCAS: goroutines increment one counter with read-modify-CAS
// retries; no increment may be lost.
func testConcurrentCAS(t *testing.T, s storage.Store) {
	const workers, incs = 8, 25
	mustCreate(t, s, "/counter", "0")
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			kv, err := s.Get(ctx, "/counter")
			if err != nil {
				errc <- err
				return
			}
			for done := 0; done < incs; {
				n, _ := strconv.Atoi(string(kv.Value))
				rev, err := s.Update(ctx, "/counter", []byte(strconv.Itoa(n+1)), kv.ModRevision)
				var ce *storage.ConflictError
				switch {
				case err == nil:
					kv = storage.KeyValue{Value: []byte(strconv.Itoa(n + 1)), ModRevision: rev}
					done++
				case errors.As(err, &ce):
					kv = ce.Current // retry without another read
				default:
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if got := string(mustGet(t, s, "/counter").Value); got != strconv.Itoa(workers*incs) {
		t.Fatalf("counter = %s, want %d (lost updates)", got, workers*incs)
	}
}

// testContextCancelledWrite: a write whose context is already done fails
// with the context's error and changes nothing.
func testContextCancelledWrite(t *testing.T, s storage.Store) {
	r := mustCreate(t, s, "/k", "v")
	ctx := cancelledCtx()
	if _, err := s.Create(ctx, "/new", []byte("v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create with cancelled ctx: %v, want context.Canceled", err)
	}
	if _, err := s.Update(ctx, "/k", []byte("w"), r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update with cancelled ctx: %v, want context.Canceled", err)
	}
	if _, _, err := s.Delete(ctx, "/k", 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Delete with cancelled ctx: %v, want context.Canceled", err)
	}
	if _, err := s.Get(testCtx(t), "/new"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("cancelled Create left a value behind: %v", err)
	}
	expectKV(t, mustGet(t, s, "/k"), "/k", "v", r, r)
	if cur := mustRev(t, s); cur != r {
		t.Fatalf("cancelled writes moved the revision from %d to %d", r, cur)
	}
}

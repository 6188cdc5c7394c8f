package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

func testContext(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// nextEvent waits for w's next event or fails.
func nextEvent(t *testing.T, w storage.Watcher, d time.Duration) storage.Event {
	t.Helper()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			t.Fatalf("watch ended: %v", w.Err())
		}
		return ev
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
	}
	panic("unreachable")
}

// TestTTLWrites: keys written with a TTL disappear, as delete events
// after their last write.
func TestTTLWrites(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newTestStore(t, c, Config{})
	ctx := testContext(t, 60*time.Second)
	w, err := s.Watch(ctx, "/core/events/", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 5
	for i := range n {
		if _, err := s.CreateWithTTL(ctx, fmt.Sprintf("/core/events/ns/e%02d", i), []byte("v"), time.Second); err != nil {
			t.Fatalf("CreateWithTTL: %v", err)
		}
	}
	r, err := s.Create(ctx, "/core/events/ns/kept", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	rev, err := s.UpdateWithTTL(ctx, "/core/events/ns/kept", []byte("w"), r, time.Second)
	if err != nil {
		t.Fatalf("UpdateWithTTL: %v", err)
	}
	if _, err := s.UpdateWithTTL(ctx, "/core/events/ns/kept", []byte("x"), r, time.Second); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("UpdateWithTTL with a stale revision: %v, want a conflict", err)
	}
	deleted := map[string]bool{}
	for len(deleted) < n+1 {
		ev := nextEvent(t, w, 20*time.Second)
		if ev.Type == storage.EventDelete {
			deleted[ev.Key] = true
			if ev.Key == "/core/events/ns/kept" && ev.Revision <= rev {
				t.Fatalf("delete at %d before the last write %d", ev.Revision, rev)
			}
		}
	}
	list, _, err := s.List(ctx, "/core/events/")
	if err != nil || len(list) != 0 {
		t.Fatalf("after expiry: %d keys, %v", len(list), err)
	}
	if _, err := s.CreateWithTTL(ctx, "/core/events/ns/bad", nil, 0); err == nil {
		t.Fatal("CreateWithTTL with ttl 0 succeeded")
	}
}

// TestTTLLeasesShared: writes with an event's TTL (an hour) within one
// window share a lease, up to maxObjects per lease.
func TestTTLLeasesShared(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newTestStore(t, c, Config{})
	const perLease = 20
	s.leases.maxObjects = perLease
	ctx := testContext(t, 60*time.Second)
	const n = perLease + 5
	for i := range n {
		if _, err := s.CreateWithTTL(ctx, fmt.Sprintf("/core/events/ns/e%04d", i), nil, time.Hour); err != nil {
			t.Fatalf("CreateWithTTL: %v", err)
		}
	}
	leases, err := c.Client(t).Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Leases) != 2 {
		t.Errorf("%d writes made %d leases, want 2 (%d per lease)", n, len(leases.Leases), perLease)
	}
	ttl, err := c.Client(t).TimeToLive(ctx, leases.Leases[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	// An hour plus the reuse window: keys expire late, never early.
	if ttl.GrantedTTL != 3600+60 {
		t.Errorf("granted TTL %d s, want 3660", ttl.GrantedTTL)
	}
}

// TestCompactCoordinated: of two API servers calling every interval, one
// compacts per interval, and the other learns the compaction.
func TestCompactCoordinated(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := newTestStore(t, c, Config{})
	b := newTestStore(t, c, Config{})
	ctx := testContext(t, 30*time.Second)
	round := func(first, second *Store) (bool, bool, int64) {
		t.Helper()
		rev, err := first.Create(ctx, fmt.Sprintf("/k/%d", time.Now().UnixNano()), nil)
		if err != nil {
			t.Fatal(err)
		}
		x, err := first.CompactCoordinated(ctx, rev)
		if err != nil {
			t.Fatalf("CompactCoordinated: %v", err)
		}
		y, err := second.CompactCoordinated(ctx, rev)
		if err != nil {
			t.Fatalf("CompactCoordinated: %v", err)
		}
		return x, y, rev
	}
	if x, y, _ := round(a, b); !x || y {
		t.Fatalf("round 1: a compacted %v, b compacted %v; want only a (fresh key)", x, y)
	}
	// b learnt the version: now whoever comes first wins.
	x, y, rev := round(b, a)
	if !x || y {
		t.Fatalf("round 2: b compacted %v, a compacted %v; want only b", x, y)
	}
	// a learns b's compaction from compact_rev_key without compacting.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _ := a.CompactedRevision(ctx)
		if got == rev {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a's CompactedRevision = %d, want %d", got, rev)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := a.Watch(ctx, "/", rev-1); !errors.Is(err, storage.ErrCompacted) {
		t.Fatalf("watch below b's compaction: %v", err)
	}
}

// TestCompactedRevisionAtStart: a store opened on an etcd compacted
// earlier (by anyone) knows the compaction revision.
func TestCompactedRevisionAtStart(t *testing.T) {
	c := etcdtest.Start(t, 1)
	raw := c.Client(t)
	ctx := testContext(t, 30*time.Second)
	var rev int64
	for i := range 5 {
		resp, err := raw.Put(ctx, fmt.Sprintf("/x/%d", i), "v")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	if _, err := raw.Compact(ctx, rev-1); err != nil {
		t.Fatal(err)
	}
	s := newTestStore(t, c, Config{})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got, _ := s.CompactedRevision(ctx); got == rev-1 {
			break
		}
		if time.Now().After(deadline) {
			got, _ := s.CompactedRevision(ctx)
			t.Fatalf("CompactedRevision = %d, want %d", got, rev-1)
		}
	}
}

func TestDBSizeAndMetrics(t *testing.T) {
	c := etcdtest.Start(t, 1)
	reg := newRegistry()
	s := newTestStore(t, c, Config{Metrics: reg})
	// A second store (another shard) shares the collectors.
	newTestStore(t, c, Config{Metrics: reg})
	ctx := testContext(t, 30*time.Second)
	size, err := s.DBSize(ctx)
	if err != nil || size <= 0 {
		t.Fatalf("DBSize = %d, %v", size, err)
	}
	if _, err := s.Create(ctx, "/apps/deployments/ns/d", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "/core/pods/ns/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	want := map[string]bool{
		`etcd_request_duration_seconds{operation="create",type="deployments.apps"}`: false,
		`etcd_requests_total{operation="get",type="pods"}`:                          false,
		`etcd_db_total_size_in_bytes{endpoint="` + c.Endpoint(0) + `"}`:             false,
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for _, m := range gather(t, reg) {
			if _, ok := want[m]; ok {
				want[m] = true
			}
		}
		missing := 0
		for _, ok := range want {
			if !ok {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics missing: %v", want)
		}
	}
}

// TestBadKeys: keys the store cannot hold are refused with ErrBadKey.
func TestBadKeys(t *testing.T) {
	c := etcdtest.Start(t, 1)
	layout := testLayout(t)
	s := newTestStore(t, c, Config{KeyLayout: layout})
	ctx := testContext(t, 10*time.Second)
	for _, k := range []string{"nokey", "", "/minions/n1"} {
		if _, err := s.Create(ctx, k, nil); !errors.Is(err, ErrBadKey) {
			t.Errorf("Create(%q) = %v, want ErrBadKey", k, err)
		}
	}
	if _, err := New(context.Background(), Config{}); err == nil {
		t.Error("New without endpoints succeeded")
	}
}

// TestCloseJoinsGoroutines: Close stops every goroutine the store started,
// watches included, and the client's.
func TestCloseJoinsGoroutines(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ignore := goleak.IgnoreCurrent()
	s, err := New(context.Background(), Config{Endpoints: c.Endpoints(), Prefix: "/leak", Metrics: newRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 20*time.Second)
	w, err := s.Watch(ctx, "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	w.RequestProgress()
	if ev := nextEvent(t, w, 10*time.Second); ev.Type != storage.EventProgress {
		t.Fatalf("got %v, want progress", ev.Type)
	}
	if _, err := s.CreateWithTTL(ctx, "/core/events/ns/e", nil, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The in-process etcd server finishes starting goroutines of its own
	// after IgnoreCurrent; only the client side is under test.
	goleak.VerifyNone(t, ignore,
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).GoAttach.func1"),
		goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/embed.(*serveCtx).startHandler.func1"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*Server).serveStreams.func2.1"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/transport.NewServerTransport.func2"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*Server).handleRawConn.func1"),
	)
}

// TestUnreachable: an etcd that accepts connections but never answers
// fails reads within the request timeout, and Health says so.
func TestUnreachable(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const timeout = 500 * time.Millisecond
	s := newTestStore(t, c, Config{RequestTimeout: timeout})
	ctx := testContext(t, 20*time.Second)
	if _, err := s.Create(ctx, "/k", nil); err != nil {
		t.Fatal(err)
	}
	c.Blackhole(0, true)
	begin := time.Now()
	_, err := s.Get(ctx, "/k")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no answer") {
		t.Errorf("Get through a blackhole: %v, want ErrUnavailable saying there was no answer", err)
	}
	if took := time.Since(begin); took > timeout+500*time.Millisecond {
		t.Errorf("Get took %v, request timeout %v", took, timeout)
	}
	if _, err := s.Create(ctx, "/k2", nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Create through a blackhole: %v, want ErrUnavailable", err)
	}
	if err := s.Health(ctx); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("Health through a blackhole: %v", err)
	}
	c.Blackhole(0, false)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := s.Get(ctx, "/k"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Get after the blackhole lifted: %v", err)
		}
	}
}

// TestListPaged: a list larger than ListPageSize is read in pages at one
// revision: every key once, in order, none written after the first page.
func TestListPaged(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := newTestStore(t, c, Config{ListPageSize: 3})
	ctx := testContext(t, 20*time.Second)
	var want []string
	for i := range 10 {
		k := fmt.Sprintf("/core/pods/ns/p%02d", i)
		want = append(want, k)
		if _, err := s.Create(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	// Outside the prefix, after it in key order: not listed.
	if _, err := s.Create(ctx, "/core/podsX/ns/q", nil); err != nil {
		t.Fatal(err)
	}
	kvs, rev, err := s.List(ctx, "/core/pods/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, kv := range kvs {
		got = append(got, kv.Key)
		if string(kv.Value) != kv.Key || kv.ModRevision > rev {
			t.Fatalf("%s: value %q at %d, list revision %d", kv.Key, kv.Value, kv.ModRevision, rev)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	if cur, _ := s.CurrentRevision(ctx); rev != cur {
		t.Fatalf("list revision %d, current %d", rev, cur)
	}
}

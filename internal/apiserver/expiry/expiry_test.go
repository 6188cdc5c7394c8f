package expiry

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

const (
	prefix = "/core/events/"
	ttl    = time.Hour
)

type harness struct {
	t     *testing.T
	store storage.Store
	clock *clocktesting.FakeClock
	e     *Expirer
}

// start opens a real embedded store holding the given keys (value: the
// key's last write as Unix seconds, which LastWrite reads) and runs an
// Expirer over it. Unless empty, the store holds a key outside the prefix
// too, so the Expirer's list has a revision to watch from and counts are
// exact (TestEmptyStore covers the other start).
func start(t *testing.T, existing map[string]time.Time) *harness {
	return startStore(t, existing, false)
}

func startStore(t *testing.T, existing map[string]time.Time, empty bool) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if !empty {
		if _, err := st.Create(ctx, "/other/seed", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for k, written := range existing {
		if _, err := st.Create(ctx, prefix+k, []byte(strconv.FormatInt(written.Unix(), 10))); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, store: st, clock: clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))}
	h.e, err = New(Config{
		Store: st, Prefix: prefix, TTL: ttl, Clock: h.clock, Metrics: prometheus.NewRegistry(),
		LastWrite: func(kv storage.KeyValue) (time.Time, bool) {
			s, err := strconv.ParseInt(string(kv.Value), 10, 64)
			return time.Unix(s, 0), err == nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = st.Close()
	})
	return h
}

// waitPending waits until the Expirer has queued n keys.
func (h *harness) waitPending(n int) {
	h.t.Helper()
	h.waitPendingAtLeast(n, true)
}

func (h *harness) waitPendingAtLeast(n int, exact bool) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := testutil.ToFloat64(h.e.pending); got != float64(n) && (exact || got < float64(n)); got = testutil.ToFloat64(h.e.pending) {
		if time.Now().After(deadline) {
			h.t.Fatalf("pending %v, want %d", testutil.ToFloat64(h.e.pending), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// advance steps the clock and waits for the tick's deletes to finish.
func (h *harness) advance(d time.Duration, wantExpired int) {
	h.t.Helper()
	h.clock.Step(d)
	deadline := time.Now().Add(10 * time.Second)
	for testutil.ToFloat64(h.e.expired) != float64(wantExpired) {
		if time.Now().After(deadline) {
			h.t.Fatalf("expired %v, want %d", testutil.ToFloat64(h.e.expired), wantExpired)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *harness) exists(key string) bool {
	h.t.Helper()
	_, err := h.store.Get(context.Background(), prefix+key)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		h.t.Fatal(err)
	}
	return err == nil
}

// put writes key with the current time as its value, so the Expirer
// dates it alike whether its first list or its watch sees it.
func (h *harness) put(key string) {
	h.t.Helper()
	ctx := context.Background()
	now := []byte(strconv.FormatInt(h.clock.Now().Unix(), 10))
	kv, err := h.store.Get(ctx, prefix+key)
	if errors.Is(err, storage.ErrNotFound) {
		_, err = h.store.Create(ctx, prefix+key, now)
	} else if err == nil {
		_, err = h.store.Update(ctx, prefix+key, now, kv.ModRevision)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

func TestExpiresAfterLastWrite(t *testing.T) {
	h := start(t, nil)
	h.waitPending(0)
	h.put("a")
	h.waitPending(1)
	h.advance(30*time.Minute, 0)
	h.put("a") // rewritten: due a TTL from now, the first entry is stale
	h.put("b")
	h.waitPending(3)
	h.advance(31*time.Minute, 0) // a's first entry comes due but a moved on
	if !h.exists("a") || !h.exists("b") {
		t.Fatal("a key was deleted before a TTL after its last write")
	}
	h.advance(30*time.Minute, 2)
	if h.exists("a") || h.exists("b") {
		t.Fatal("keys outlived their TTL")
	}
	h.waitPending(0)
}

func TestStartReadsAgesFromValues(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h := start(t, map[string]time.Time{
		"old":    now.Add(-2 * time.Hour), // past its TTL already
		"middle": now.Add(-40 * time.Minute),
		"future": now.Add(time.Hour), // a clock ahead: a full TTL from now
	})
	h.waitPending(3)
	h.advance(time.Second, 1)
	if h.exists("old") {
		t.Error("an event written two hours ago survived the start")
	}
	h.advance(20*time.Minute, 2)
	if h.exists("middle") || !h.exists("future") {
		t.Error("middle should be gone 60 minutes after its write, future kept")
	}
	h.advance(40*time.Minute, 3)
	if h.exists("future") {
		t.Error("future outlived a TTL from the start")
	}
}

func TestDeletedByOthersIsNotAnError(t *testing.T) {
	h := start(t, nil)
	h.waitPending(0)
	h.put("gone")
	h.waitPending(1)
	if _, _, err := h.store.Delete(context.Background(), prefix+"gone", 0); err != nil {
		t.Fatal(err)
	}
	h.advance(ttl, 0)
	h.waitPending(0)
}

// TestEmptyStore: on a store never written to, the first list has no
// revision to watch from; a key written while the Expirer starts is still
// queued (perhaps twice: its list and its watch both see it) and expires.
func TestEmptyStore(t *testing.T) {
	h := startStore(t, nil, true)
	h.put("early")
	h.waitPendingAtLeast(1, false)
	h.clock.Step(ttl)
	deadline := time.Now().Add(10 * time.Second)
	for h.exists("early") {
		if time.Now().After(deadline) {
			t.Fatal("a key written as the Expirer started never expired")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestConfigRequired(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no store": {Prefix: prefix, TTL: ttl, Clock: clocktesting.NewFakeClock(time.Now())},
		"no ttl":   {Store: nil, Prefix: prefix, Clock: clocktesting.NewFakeClock(time.Now())},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

package cache

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

// newSmallBufferEnv is an env whose store ends watchers that fall 8 events
// behind, so a test can make the cache's own store watch fail.
func newSmallBufferEnv(t *testing.T) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	s, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir(), WatchBuffer: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	e := &env{t: t, ctx: ctx, store: s, codec: newPodCodec(t), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	return e.startCache(nil)
}

// When the store drops the cache's watch (too slow), the cache resumes
// from its revision: its watchers see every change exactly once, in order.
func TestStoreWatchLostResumes(t *testing.T) {
	e := newSmallBufferEnv(t)
	from := e.c.Revision()
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(from)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Hold the reflector off the state so the store's buffer overflows.
	e.c.mu.RLock()
	var last int64
	for i := range 50 {
		last = e.create(newPod("ns", fmt.Sprintf("p%02d", i), "n1", nil))
	}
	e.c.mu.RUnlock()
	for i := range 50 {
		ev := next(t, w)
		if ev.Type != watch.Added || ev.Revision != from+int64(i)+1 {
			t.Fatalf("event %d: %s, want ADDED at %d", i, describe(ev), from+int64(i)+1)
		}
	}
	if e.c.Revision() != last {
		t.Fatalf("cache at %d, want %d", e.c.Revision(), last)
	}
	if r, i := counterValue(t, e.c.metrics.restarts), counterValue(t, e.c.metrics.initializations); r < 1 || i != 1 {
		t.Fatalf("store watch restarts %v, initializations %v: want >= 1 and 1", r, i)
	}
}

// When the history the cache needs was compacted away, it re-lists; its
// watchers' positions are lost, so they end with 410 and clients re-list.
func TestCompactionForcesRelist(t *testing.T) {
	e := newSmallBufferEnv(t)
	e.waitRev(e.create(newPod("ns", "old", "n1", nil)))
	w, err := e.c.Watch(e.ctx, WatchOptions{ResourceVersion: formatRV(e.c.Revision())})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e.c.mu.RLock()
	var last int64
	for i := range 50 {
		last = e.create(newPod("ns", fmt.Sprintf("p%02d", i), "n1", nil))
	}
	if err := e.store.Compact(e.ctx, last); err != nil {
		e.c.mu.RUnlock()
		t.Fatal(err)
	}
	e.c.mu.RUnlock()
	var final *Event
	for ev := range w.ResultChan() {
		final = ev
	}
	if final == nil || final.Type != watch.Error {
		t.Fatalf("last event %v, want an ERROR", final)
	}
	if st := evObj(final).(*metav1.Status); st.Code != 410 || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("status %+v", st)
	}
	e.waitRev(last)
	if i := counterValue(t, e.c.metrics.initializations); i != 2 {
		t.Fatalf("initializations %v, want 2", i)
	}
	got, _, err := e.list(ListOptions{ResourceVersion: "0"})
	if err != nil || len(got) != 51 {
		t.Fatalf("after re-list: %d objects, %v", len(got), err)
	}
	// History before the re-list is gone.
	_, _, err = e.list(ListOptions{ResourceVersion: formatRV(last - 1), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("exact list before the re-list: %v", err)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// listThenWrite is the real store with one write slipped in right after
// the first List returns: the window in which a watch "from now" (the
// store's meaning of revision 0) would miss it.
type listThenWrite struct {
	storage.Store
	once  sync.Once
	write func()
}

func (s *listThenWrite) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	kvs, rev, err := s.Store.List(ctx, prefix)
	s.once.Do(s.write)
	return kvs, rev, err
}

func TestWriteBetweenListAndWatchOnNewStore(t *testing.T) {
	e := &env{t: t, store: openStore(t), codec: newPodCodec(t), clock: testingclock.NewFakeClock(time.Unix(1_700_000_000, 0))}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.ctx = ctx
	racy := &listThenWrite{Store: e.store, write: func() { e.create(newPod("ns", "a", "n1", nil)) }}
	e.startCache(func(c *Config) { c.Store = racy })
	if _, err := e.c.Get(ctx, podKey("ns", "a"), ""); err != nil {
		t.Fatalf("write made between the first list and watch is missing: %v", err)
	}
}

package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newContext(reg prometheus.Registerer, clk *clocktesting.FakeClock) *controllerctx.Context {
	return &controllerctx.Context{Clock: clk, Logger: slog.New(slog.DiscardHandler), Metrics: reg}
}

// gather returns the registry's samples as "name{label=value,...}" → value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			key := mf.GetName() + "{"
			for i, lp := range m.GetLabel() {
				if i > 0 {
					key += ","
				}
				key += lp.GetName() + "=" + lp.GetValue()
			}
			key += "}"
			out[key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestLoopMetricsPerController: every Loop exports the queue and sync
// metrics under its own name; two Loops of one name share them.
func TestLoopMetricsPerController(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newContext(reg, clocktesting.NewFakeClock(time.Now()))
	for _, name := range []string{"a", "b", "a"} {
		l := NewLoop(c, name, func(context.Context, string) error { return nil }, Options[string]{})
		l.Add("k")
		l.processNext(context.Background())
		l.ShutDown()
	}
	got := gather(t, reg)
	for key, want := range map[string]float64{
		"myriad_controller_syncs_total{controller=a,result=success}":    2,
		"myriad_controller_syncs_total{controller=b,result=success}":    1,
		"myriad_controller_sync_duration_seconds{controller=a}":         2,
		"workqueue_adds_total{name=a}":                                  2,
		"workqueue_adds_total{name=b}":                                  1,
		"workqueue_depth{name=a}":                                       0,
		"workqueue_depth{name=b}":                                       0,
		"workqueue_work_duration_seconds{name=b}":                       1,
		"myriad_controller_sync_duration_seconds{controller=b}":         1,
		"workqueue_queue_duration_seconds{name=a}":                      2,
		"workqueue_longest_running_processor_seconds{name=a}":           0,
		"workqueue_unfinished_work_seconds{name=b}":                     0,
		"workqueue_retries_total{name=a}":                               0,
		"myriad_controller_syncs_total{controller=a,result=error}":      0, // exported from the start
		"myriad_controller_syncs_total{controller=a,result=requeue}":    0,
		"myriad_controller_syncs_total{controller=b,result=unexpected}": -1,
	} {
		v, ok := got[key]
		switch {
		case want < 0 && ok:
			t.Errorf("%s = %v, want absent", key, v)
		case want >= 0 && !ok:
			t.Errorf("%s missing", key)
		case want >= 0 && v != want:
			t.Errorf("%s = %v, want %v", key, v, want)
		}
	}
}

// TestLoopRetries: failures back off on the context's clock and are
// dropped after MaxRetries; ErrRequeue and RequeueAfter retry without a
// cap and count as requeues.
func TestLoopRetries(t *testing.T) {
	errFail := errors.New("fail")
	tests := []struct {
		name       string
		err        error
		maxRetries int
		syncs      int  // syncs to run
		dropped    bool // whether the key is gone after them
		wantResult string
	}{
		{"failures are dropped after MaxRetries", errFail, 3, 4, true, "error"},
		{"negative MaxRetries never drops", errFail, -1, 10, false, "error"},
		{"ErrRequeue is not capped", fmt.Errorf("busy: %w", ErrRequeue), 3, 10, false, "requeue"},
		{"RequeueAfter is not capped", RequeueAfter(time.Minute), 3, 10, false, "requeue"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			// A fixed 1 s per retry: stepping the fake clock a minute
			// releases every retry.
			l := NewLoop(newContext(nil, clk), "l", func(context.Context, string) error { return tc.err },
				Options[string]{RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Second), MaxRetries: tc.maxRetries})
			defer l.ShutDown()
			// next releases waiting retries and waits for the delaying
			// queue's goroutine to hand the key back.
			next := func() {
				t.Helper()
				if l.Len() > 0 {
					return
				}
				clk.Step(time.Minute)
				for deadline := time.Now().Add(10 * time.Second); l.Len() == 0; {
					if time.Now().After(deadline) {
						t.Fatal("the key did not come back")
					}
					time.Sleep(time.Millisecond)
				}
			}
			l.Add("k")
			for range tc.syncs {
				next()
				l.processNext(context.Background())
			}
			var m dto.Metric
			if err := l.syncs.WithLabelValues(tc.wantResult).Write(&m); err != nil {
				t.Fatal(err)
			}
			if got := value(&m); int(got) != tc.syncs {
				t.Errorf("syncs_total{result=%s} = %v, want %d", tc.wantResult, got, tc.syncs)
			}
			if tc.dropped {
				// Dropped: forgotten, and nothing waits to re-add it.
				if l.Len() != 0 || l.NumRequeues("k") != 0 {
					t.Errorf("key kept: len %d, requeues %d", l.Len(), l.NumRequeues("k"))
				}
				return
			}
			next() // still retried
		})
	}
}

// TestLoopRun: Run waits for the caches, syncs what was queued while it
// stood by, and returns with its workers once ctx is done.
func TestLoopRun(t *testing.T) {
	synced := make(chan string, 3)
	l := NewLoop(newContext(nil, clocktesting.NewFakeClock(time.Now())), "l", func(_ context.Context, k string) error {
		synced <- k
		return nil
	}, Options[string]{})
	l.Add("a")
	l.Add("b")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx, 2, func() bool { return true }); close(done) }()
	got := map[string]bool{<-synced: true, <-synced: true}
	if !got["a"] || !got["b"] {
		t.Fatalf("synced %v", got)
	}
	cancel()
	<-done
	if !l.ShuttingDown() {
		t.Fatal("queue not shut down after Run")
	}
}

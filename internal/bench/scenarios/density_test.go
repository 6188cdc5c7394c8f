package scenarios

import (
	"context"
	"math"
	"runtime"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/sim"
)

func TestPeakRate(t *testing.T) {
	s := []loadtest.Series{{Name: "pods running", Points: []loadtest.Point{
		{T: 0, V: 0}, {T: 0.5, V: 0}, {T: 1, V: 50}, {T: 1.5, V: 250}, {T: 2, V: 300}, {T: 2.5, V: 300}, {T: 10, V: 300},
	}}}
	for _, tc := range []struct {
		name   string
		t0, t1 float64
		want   float64
	}{
		{"whole run", 0, 10, 250},  // 0.5 → 1.5 s or 1 → 2 s: 250 pods
		{"late window", 2, 10, 0},  // nothing after 2 s
		{"other series", 0, 10, 0}, // absent
	} {
		name := "pods running"
		if tc.name == "other series" {
			name = "pods created"
		}
		if got := peakRate(s, name, tc.t0, tc.t1); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPace drives pace on a fake clock, one tick at a time, and waits
// for each call that comes due before the next tick, so every count is
// exact: no call is dropped and none depends on how fast the test runs.
func TestPace(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		rate     float64
		workers  int
		deadline time.Duration // after t0
		maxCalls int64
		ticks    int   // ticks until pace returns
		want     int64 // calls started
	}{
		{"stops at its deadline: rate × duration calls", 20, 2, 500 * time.Millisecond, 0, 50, 10},
		{"stops at maxCalls", 20, 2, time.Hour, 3, 15, 3},
		{"stops at maxCalls at a high rate", 1e6, 8, time.Hour, 5, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(t0)
			calls := make(chan int64, 100)
			type result struct{ started, dropped int64 }
			done := make(chan result, 1)
			go func() {
				s, d := paceOn(t.Context(), clk, tc.rate, tc.workers, t0.Add(tc.deadline), tc.maxCalls,
					func(_ context.Context, _ int, i int64) { calls <- i })
				done <- result{s, d}
			}()
			waitFor(t, "pace's timer and ticker", func() bool { return clk.Waiters() == 2 })
			var got int64
			seen := map[int64]bool{}
			for tick := 1; tick <= tc.ticks; tick++ {
				clk.Step(paceInterval)
				due := int64(math.Floor((time.Duration(tick) * paceInterval).Seconds() * tc.rate))
				if tc.maxCalls > 0 {
					due = min(due, tc.maxCalls)
				}
				for ; got < due; got++ {
					select {
					case i := <-calls:
						if i < 0 || i >= due || seen[i] {
							t.Fatalf("tick %d: call number %d, want a new one below %d", tick, i, due)
						}
						seen[i] = true
					case <-time.After(10 * time.Second):
						t.Fatalf("tick %d: call %d did not come", tick, got)
					}
				}
			}
			select {
			case r := <-done:
				if r.started != tc.want || r.dropped != 0 || got != tc.want || len(calls) != 0 {
					t.Errorf("started %d, dropped %d, ran %d+%d; want %d started, none dropped",
						r.started, r.dropped, got, len(calls), tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("pace did not return after %d ticks", tc.ticks)
			}
		})
	}
}

// TestPaceCancelled: a cancelled context ends pace with no tick.
func TestPaceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	clk := testingclock.NewFakeClock(time.Now())
	started, dropped := paceOn(ctx, clk, 1e6, 4, clk.Now().Add(time.Hour), 0, func(context.Context, int, int64) {
		t.Error("called after the context ended")
	})
	if started != 0 || dropped != 0 {
		t.Errorf("started %d, dropped %d; want none", started, dropped)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s: a wait
// for another goroutine to get somewhere, not a measure of time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: gave up after 10 s", what)
		}
		runtime.Gosched()
	}
}

// TestNodeSteps checks the node steps are kept per pod, the first of each
// kind winning (a node that recovers may report a pod again).
func TestNodeSteps(t *testing.T) {
	s := newNodeSteps()
	at := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	s.observe(sim.PodAdmitted, "ns", "a", at)
	s.observe(sim.PodAdmitted, "ns", "a", at.Add(time.Hour))
	s.observe(sim.PodRunningWritten, "ns", "a", at.Add(time.Second))
	s.observe(sim.PodAdmitted, "ns", "b", at.Add(2*time.Second))
	for _, tc := range []struct {
		key               string
		admitted, running time.Time
	}{
		{"ns/a", at, at.Add(time.Second)},
		{"ns/b", at.Add(2 * time.Second), time.Time{}},
		{"ns/c", time.Time{}, time.Time{}},
		{"other/a", time.Time{}, time.Time{}},
	} {
		a, r := s.get(tc.key)
		if !a.Equal(tc.admitted) || !r.Equal(tc.running) {
			t.Errorf("%s: admitted %v running %v, want %v %v", tc.key, a, r, tc.admitted, tc.running)
		}
	}
}

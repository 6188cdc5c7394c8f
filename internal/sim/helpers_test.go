package sim

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// testSim is a simulator on a fake clientset and a fake clock.
type testSim struct {
	*Sim
	client *fake.Clientset
	clock  *testingclock.FakeClock
}

// newTestSim builds a simulator of nodes hollow nodes; mutate adjusts the
// config before defaults are filled in.
func newTestSim(t testing.TB, nodes int, mutate func(*Config)) *testSim {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	cfg := Config{RESTConfig: &rest.Config{Host: "http://unused"}, Nodes: nodes, Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset()
	s, err := newSim(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	return &testSim{Sim: s, client: client, clock: clk}
}

// run starts ts and stops it when the test ends.
func (ts *testSim) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		ts.Stop()
	})
	if err := ts.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// settle waits (in real time) until no scheduler has work running or due.
func (ts *testSim) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		now := ts.clock.Now()
		if ts.heartbeats.idle(now) && ts.podWork.idle(now) && ts.greedy.idle(now) {
			return
		}
		// A dispatcher that read the clock just before a Step set its fake
		// timer from the old time and would sleep past the due work: poke it
		// to look again.
		for _, s := range []*scheduler{ts.heartbeats, ts.podWork, ts.greedy} {
			poke(s)
		}
		time.Sleep(100 * time.Microsecond)
	}
	t.Fatal("schedulers did not settle")
}

// advance steps the fake clock by total in steps of step, settling after
// each.
func (ts *testSim) advance(t *testing.T, total, step time.Duration) {
	t.Helper()
	ts.settle(t)
	for d := time.Duration(0); d < total; d += step {
		ts.clock.Step(step)
		ts.settle(t)
	}
}

// recorder records, for each object name, when (fake time) a verb on a
// resource happened.
type recorder struct {
	mu    sync.Mutex
	times map[string][]time.Time
}

func (ts *testSim) record(verb, resource string) *recorder {
	r := &recorder{times: map[string][]time.Time{}}
	ts.client.PrependReactor(verb, resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
		var name string
		switch a := a.(type) {
		case k8stesting.UpdateAction:
			name = a.GetObject().(interface{ GetName() string }).GetName()
		case k8stesting.DeleteAction:
			name = a.GetName()
		}
		r.mu.Lock()
		r.times[name] = append(r.times[name], ts.clock.Now())
		r.mu.Unlock()
		return false, nil, nil
	})
	return r
}

func (r *recorder) get(name string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times[name]...)
}

func poke(s *scheduler) {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

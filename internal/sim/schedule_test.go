package sim

import (
	"context"
	"fmt"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

func TestSlotSpreadsNodesOverThePeriod(t *testing.T) {
	ts := newTestSim(t, 10000, nil)
	ts.Sim.start = t0
	period := 10 * time.Second
	tests := []struct {
		local int
		at    time.Time
		want  time.Time
	}{
		{0, t0, t0},
		{1, t0, t0.Add(time.Millisecond)},
		{5000, t0, t0.Add(5 * time.Second)},
		{9999, t0, t0.Add(9999 * time.Millisecond)},
		// After its first slot a node's next slot is one period on.
		{0, t0.Add(time.Nanosecond), t0.Add(period)},
		{1, t0.Add(1500 * time.Millisecond), t0.Add(period + time.Millisecond)},
		{1, t0.Add(period + time.Millisecond), t0.Add(period + time.Millisecond)},
		{5000, t0.Add(42 * time.Second), t0.Add(45 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("node%d@%v", tc.local, tc.at.Sub(t0)), func(t *testing.T) {
			if got := ts.nodes[tc.local].slot(tc.at, period); !got.Equal(tc.want) {
				t.Errorf("slot = +%v, want +%v", got.Sub(t0), tc.want.Sub(t0))
			}
		})
	}
}

func TestSchedulerRunsTasksAtTheirDueTimeInOrder(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScheduler(clk, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s.start(ctx, &wg)
	defer func() { cancel(); wg.Wait() }()

	var mu sync.Mutex
	var ran []string
	add := func(name string, at time.Duration) {
		s.at(t0.Add(at), func(due time.Time) {
			mu.Lock()
			ran = append(ran, fmt.Sprintf("%s@%v(due %v)", name, clk.Now().Sub(t0), due.Sub(t0)))
			mu.Unlock()
		})
	}
	add("c", 3*time.Second)
	add("a", time.Second)
	add("b", 2*time.Second)
	add("b2", 2*time.Second) // same due time: FIFO
	settle := func() {
		deadline := time.Now().Add(5 * time.Second)
		for !s.idle(clk.Now()) && time.Now().Before(deadline) {
			poke(s)
			time.Sleep(100 * time.Microsecond)
		}
	}
	for range 6 {
		settle()
		clk.Step(500 * time.Millisecond)
	}
	settle()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"a@1s(due 1s)", "b@2s(due 2s)", "b2@2s(due 2s)", "c@3s(due 3s)"}
	if fmt.Sprint(ran) != fmt.Sprint(want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}

// Every node renews once per period, at its own offset, so renewals are
// spread evenly and none is late.
func TestLeaseRenewalsAreSpreadEvenly(t *testing.T) {
	const nodes = 50
	ts := newTestSim(t, nodes, nil)
	updates := ts.record("update", "leases")
	ts.run(t)
	ts.advance(t, 25*time.Second, 100*time.Millisecond)

	spacing := 10 * time.Second / nodes
	for k, name := range ts.NodeNames() {
		got := updates.get(name)
		// Creating the Lease at t0 was the first heartbeat; renewals follow
		// on the node's slots from half a period later.
		var want []time.Time
		for m := range 3 {
			at := t0.Add(time.Duration(k)*spacing + time.Duration(m)*10*time.Second)
			if !at.Before(t0.Add(5*time.Second)) && !at.After(t0.Add(25*time.Second)) {
				want = append(want, at)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s renewed at %v, want %v", name, got, want)
		}
	}
	st := ts.Stats()
	if st.LatenessMax != 0 || st.RenewalErrors != 0 {
		t.Errorf("lateness max %v, errors %d; want 0, 0", st.LatenessMax, st.RenewalErrors)
	}
	if st.MaxRenewGap > 15*time.Second {
		t.Errorf("max renew gap %v, want <= 15s", st.MaxRenewGap)
	}
}

func TestFailedNodeStopsRenewingAndRecovers(t *testing.T) {
	ts := newTestSim(t, 2, nil)
	updates := ts.record("update", "leases")
	ts.run(t)
	name := ts.NodeNames()[1]
	if err := ts.Fail(name); err != nil {
		t.Fatal(err)
	}
	ts.advance(t, 30*time.Second, 100*time.Millisecond)
	if got := updates.get(name); len(got) != 0 {
		t.Fatalf("failed node renewed at %v", got)
	}
	if got := len(updates.get(ts.NodeNames()[0])); got != 3 {
		t.Errorf("healthy node renewed %d times in 30s, want 3", got)
	}
	if st := ts.Stats(); st.Failed != 1 {
		t.Errorf("Stats.Failed = %d, want 1", st.Failed)
	}
	if err := ts.Recover(name); err != nil {
		t.Fatal(err)
	}
	ts.settle(t)
	if got := updates.get(name); len(got) != 1 || !got[0].Equal(t0.Add(30*time.Second)) {
		t.Fatalf("recovered node renewed at %v, want once at once (+30s)", got)
	}
	if err := ts.Fail("no-such-node"); err == nil {
		t.Error("Fail of an unknown node: no error")
	}
}

// A failed renewal is retried with the kubelet's backoff (200 ms, 400 ms,
// ...) and its lateness counts from the slot it missed.
func TestFailedRenewalIsRetriedWithBackoff(t *testing.T) {
	ts := newTestSim(t, 1, nil)
	fails := 2
	ts.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewTooManyRequests("busy", 1)
		}
		return false, nil, nil
	})
	updates := ts.record("update", "leases") // runs before the failing reactor
	ts.run(t)
	ts.advance(t, 11*time.Second, 100*time.Millisecond)
	want := []time.Time{t0.Add(10 * time.Second), t0.Add(10*time.Second + 200*time.Millisecond), t0.Add(10*time.Second + 600*time.Millisecond)}
	if got := updates.get("hollow-node-0"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("renewal attempts at %v, want %v", got, want)
	}
	st := ts.Stats()
	if st.Renewals != 1 || st.RenewalErrors != 2 || st.LatenessMax != 600*time.Millisecond {
		t.Errorf("renewals %d errors %d lateness max %v, want 1 2 600ms", st.Renewals, st.RenewalErrors, st.LatenessMax)
	}
}

// With FullStatusHeartbeat the heartbeat is the Node status every
// RenewInterval and there is no Lease.
func TestFullStatusHeartbeat(t *testing.T) {
	ts := newTestSim(t, 4, func(c *Config) { c.FullStatusHeartbeat = true })
	status := ts.record("update", "nodes")
	ts.run(t)
	ts.advance(t, 30*time.Second, 100*time.Millisecond)
	leases, err := ts.client.CoordinationV1().Leases(LeaseNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(leases.Items) != 0 {
		t.Errorf("%d Leases with FullStatusHeartbeat, want none", len(leases.Items))
	}
	// Node 2 of 4: offset 5 s; registered at t0, first beat from t0+5s.
	want := []time.Time{t0.Add(5 * time.Second), t0.Add(15 * time.Second), t0.Add(25 * time.Second)}
	if got := status.get("hollow-node-2"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("status writes at %v, want %v", got, want)
	}
	if st := ts.Stats(); st.Renewals != 11 || st.NodeStatusUpdates != 0 {
		t.Errorf("renewals %d status updates %d, want 11 (3+3+3+2) and 0", st.Renewals, st.NodeStatusUpdates)
	}
}

// Greedy agents list all Services, each node every interval at its offset.
func TestGreedyListsAreSpread(t *testing.T) {
	ts := newTestSim(t, 4, func(c *Config) { c.GreedyListInterval = 2 * time.Second })
	var mu sync.Mutex
	var at []time.Duration
	ts.client.PrependReactor("list", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if ns := a.GetNamespace(); ns != "" {
			t.Errorf("greedy list in namespace %q, want all namespaces", ns)
		}
		mu.Lock()
		at = append(at, ts.clock.Now().Sub(t0))
		mu.Unlock()
		return false, nil, nil
	})
	ts.run(t)
	ts.advance(t, 4*time.Second, 100*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	want := "[0s 500ms 1s 1.5s 2s 2.5s 3s 3.5s 4s]"
	if fmt.Sprint(at) != want {
		t.Errorf("lists at %v, want %s", at, want)
	}
	if st := ts.Stats(); st.GreedyLists != 9 {
		t.Errorf("Stats.GreedyLists = %d, want 9", st.GreedyLists)
	}
}

// A renewal that conflicts (our own earlier write, applied after a client
// timeout) re-reads the Lease and renews it: GET and PUT, no create.
func TestConflictingRenewalRereadsTheLease(t *testing.T) {
	ts := newTestSim(t, 1, nil)
	conflicts := 1
	ts.client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), "hollow-node-0", fmt.Errorf("stale"))
		}
		return false, nil, nil
	})
	ts.run(t)
	ts.client.ClearActions()
	ts.advance(t, 10*time.Second, 100*time.Millisecond)
	var verbs []string
	for _, a := range ts.client.Actions() {
		if a.GetResource().Resource == "leases" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	if fmt.Sprint(verbs) != "[update get update]" {
		t.Errorf("lease requests %v, want [update get update]", verbs)
	}
	if st := ts.Stats(); st.Renewals != 1 || st.RenewalErrors != 0 {
		t.Errorf("renewals %d errors %d, want 1 0", st.Renewals, st.RenewalErrors)
	}
}

// TestSchedulerStartsWorkersAsNeeded checks the pool grows with the work,
// to its bound and no further, and that tasks beyond the bound wait for a
// worker (and are counted as having found every worker busy).
func TestSchedulerStartsWorkersAsNeeded(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	s := newScheduler(clk, 3)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s.start(ctx, &wg)
	release := make(chan struct{})
	defer func() { close(release); cancel(); wg.Wait() }()

	// A channel, not a WaitGroup: the two tasks that wait run too once
	// released at the end, and must not count below zero.
	started := make(chan struct{}, 5)
	block := func(time.Time) { started <- struct{}{}; <-release }
	for range 2 {
		s.at(t0, block)
	}
	<-started // two tasks hold two workers
	<-started
	if b := s.busy.Load(); b != 2 {
		t.Fatalf("%d busy, want 2", b)
	}
	for range 3 {
		s.at(t0, block) // one more worker, then the bound: two tasks wait
	}
	<-started
	deadline := time.Now().Add(5 * time.Second)
	for s.saturated.Load() == 0 && time.Now().Before(deadline) {
		poke(s)
		time.Sleep(100 * time.Microsecond)
	}
	if b, sat := s.busy.Load(), s.saturated.Load(); b != 3 || sat != 1 {
		t.Errorf("%d busy, %d saturated: want 3 (the bound) and 1 (the dispatcher waits on the first of the two)", b, sat)
	}
}

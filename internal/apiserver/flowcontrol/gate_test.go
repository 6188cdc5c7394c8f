package flowcontrol

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestListGate: big lists admitted together take turns within the
// budget and all complete; small requests pass beside them.
func TestListGate(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		// A budget of about two of the namespace's lists.
		c.Estimator = EstimatorConfig{ListBudgetPerCore: 25_000, Cores: 1}
	}, nil)
	e.bigConfigMaps("default", 10, 1000)
	sa := serviceAccount("default", "lister")
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 10 {
		wg.Go(func() {
			resp, body := e.do("GET", "/api/v1/namespaces/default/configmaps", sa, "", nil)
			mu.Lock()
			defer mu.Unlock()
			codes[resp.StatusCode]++
			if resp.StatusCode != http.StatusOK {
				t.Logf("%d %s", resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	if codes[http.StatusOK] != 10 {
		t.Errorf("codes %v, want 10 × 200", codes)
	}
	if n := e.c.gate.inUse(); n != 0 {
		t.Errorf("%d bytes of budget not returned", n)
	}
}

// queued is how many waiters the gate holds.
func (g *listGate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, f := range g.turns {
		n += len(f.waiters)
	}
	return n
}

// waiting is how many waiters flow has queued.
func (g *listGate) waiting(flow string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.flows[flow]; f != nil {
		return len(f.waiters)
	}
	return 0
}

// TestListGateFairBetweenFlows: a flow with ten lists queued delays
// another flow's single list by one turn, not ten.
func TestListGateFairBetweenFlows(t *testing.T) {
	g := newListGate(100)
	hold, ok := g.acquire(context.Background(), "holder", 100)
	if !ok {
		t.Fatal("first acquire refused")
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	enqueue := func(flow string, i int) {
		wg.Go(func() {
			release, ok := g.acquire(context.Background(), flow, 100)
			if !ok {
				t.Errorf("%s %d refused", flow, i)
				return
			}
			mu.Lock()
			order = append(order, fmt.Sprintf("%s%d", flow, i))
			mu.Unlock()
			release()
		})
		for g.waiting(flow) < i {
			time.Sleep(time.Millisecond)
		}
	}
	for i := 1; i <= 10; i++ {
		enqueue("greedy", i)
	}
	enqueue("polite", 1)
	hold()
	wg.Wait()
	if len(order) != 11 || order[0] != "greedy1" || order[1] != "polite1" {
		t.Errorf("admission order %v, want greedy1, polite1, greedy2…", order)
	}
	if n := g.inUse(); n != 0 {
		t.Errorf("%d bytes still in use", n)
	}
}

func TestListGateCancel(t *testing.T) {
	g := newListGate(100)
	if release, ok := g.acquire(context.Background(), "a", 5); !ok || g.inUse() != 0 {
		t.Fatalf("small list: ok %v, in use %d; want it ungated", ok, g.inUse())
	} else {
		release()
	}
	hold, _ := g.acquire(context.Background(), "a", 60)
	// A big head that gives up must let the smaller list behind it in.
	ctx, cancel := context.WithCancel(context.Background())
	bigDone := make(chan bool)
	go func() { _, ok := g.acquire(ctx, "b", 100); bigDone <- ok }()
	for g.queued() < 1 {
		time.Sleep(time.Millisecond)
	}
	smallDone := make(chan bool)
	go func() {
		release, ok := g.acquire(context.Background(), "c", 30)
		if ok {
			release()
		}
		smallDone <- ok
	}()
	for g.queued() < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if <-bigDone {
		t.Error("cancelled acquire reported ok")
	}
	if !<-smallDone {
		t.Error("the list behind a cancelled head was not admitted")
	}
	hold()
	if n, q := g.inUse(), g.queued(); n != 0 || q != 0 {
		t.Errorf("in use %d, queued %d; want 0, 0", n, q)
	}
}

package flowcontrol

import (
	"net/http"
	"sync"
	"testing"
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
	if n := e.c.gate.sem.TryAcquire(e.c.gate.budget); !n {
		t.Errorf("budget not returned")
	}
}

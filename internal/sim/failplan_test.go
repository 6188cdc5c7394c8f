package sim

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
)

// Config.Fail (the command's --fail-nodes, --fail-after, --recover-after)
// fails the planned nodes After registration: they renew no more while the
// others go on, and RecoverAfter later they renew again at once.
func TestFailPlanFailsAndRecoversNodes(t *testing.T) {
	tests := []struct {
		name       string
		plan       FailPlan
		wantFailed []string
	}{
		{"first count nodes", FailPlan{Count: 2, After: 15 * time.Second, RecoverAfter: 20 * time.Second}, []string{"hollow-node-0", "hollow-node-1"}},
		{"named nodes, for good", FailPlan{Nodes: []string{"hollow-node-2"}, After: 15 * time.Second}, []string{"hollow-node-2"}},
		{"at once", FailPlan{Count: 1}, []string{"hollow-node-0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestSim(t, 3, func(c *Config) { c.Fail = tc.plan })
			renewals := ts.record("update", "leases")
			ts.run(t)
			if tc.plan.After > 0 {
				ts.advance(t, tc.plan.After-time.Second, 500*time.Millisecond)
				if got := ts.FailedNodes(); len(got) != 0 {
					t.Fatalf("failed before After: %v", got)
				}
				ts.advance(t, time.Second, 500*time.Millisecond)
			} else {
				ts.settle(t)
			}
			failedAt := ts.clock.Now()
			if got := ts.FailedNodes(); fmt.Sprint(got) != fmt.Sprint(tc.wantFailed) {
				t.Fatalf("failed nodes %v, want %v", got, tc.wantFailed)
			}
			stay := 30 * time.Second
			if tc.plan.RecoverAfter > 0 {
				stay = tc.plan.RecoverAfter - time.Second
			}
			ts.advance(t, stay, 500*time.Millisecond)
			failed := map[string]bool{}
			for _, name := range tc.wantFailed {
				failed[name] = true
			}
			for _, name := range ts.NodeNames() {
				var after []time.Time
				for _, at := range renewals.get(name) {
					if at.After(failedAt) {
						after = append(after, at)
					}
				}
				if failed[name] && len(after) != 0 {
					t.Errorf("failed %s renewed at %v", name, after)
				}
				if !failed[name] && len(after) < 2 {
					t.Errorf("healthy %s renewed only at %v after the others failed", name, after)
				}
			}
			if st := ts.Stats(); st.Failed != len(tc.wantFailed) {
				t.Errorf("Stats.Failed = %d, want %d", st.Failed, len(tc.wantFailed))
			}
			if tc.plan.RecoverAfter == 0 {
				return
			}
			ts.advance(t, time.Second, 500*time.Millisecond)
			recoveredAt := ts.clock.Now()
			if got := ts.FailedNodes(); len(got) != 0 {
				t.Fatalf("failed after RecoverAfter: %v", got)
			}
			for _, name := range tc.wantFailed {
				got := renewals.get(name)
				if last := got[len(got)-1]; !last.Equal(recoveredAt) {
					t.Errorf("recovered %s last renewed at +%v, want at once (+%v)", name, last.Sub(t0), recoveredAt.Sub(t0))
				}
			}
		})
	}
}

func TestFailPlanWithUnknownNode(t *testing.T) {
	cfg, err := Config{
		RESTConfig: &rest.Config{Host: "http://unused"}, Nodes: 2,
		Fail: FailPlan{Nodes: []string{"hollow-node-1", "hollow-node-2"}},
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newSim(cfg, fake.NewClientset()); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("newSim with hollow-node-2 of 2 nodes: err %v, want ErrUnknownNode", err)
	}
}

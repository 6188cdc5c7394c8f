package schedbench

import (
	"context"
	"testing"
)

// TestSmallRun checks the harness end to end on a small cluster: every pod
// is scheduled in every mode, and no node is over its allocatable.
func TestSmallRun(t *testing.T) {
	res, err := Run(context.Background(), Config{Scenarios: []Scenario{{Nodes: 200, Pods: 3000}}, Templates: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != len(DefaultModes()) {
		t.Fatalf("%d runs", len(res.Runs))
	}
	for _, r := range res.Runs {
		if r.Scheduled != 3000 || r.Unschedulable != 0 {
			t.Errorf("%s: scheduled %d unschedulable %d", r.Mode.Name, r.Scheduled, r.Unschedulable)
		}
		if r.CPUMax > 1 || r.CPUMin < 0 {
			t.Errorf("%s: cpu fraction out of range: %v..%v", r.Mode.Name, r.CPUMin, r.CPUMax)
		}
		if r.PodsPerSec <= 0 {
			t.Errorf("%s: no rate", r.Mode.Name)
		}
	}
}

package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestNewTwiceSharesCollectors: a scheduler run again in the same process
// (after losing its Lease in myriad up) registers nothing twice and keeps
// counting in the first run's collectors.
func TestNewTwiceSharesCollectors(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := New(reg)
	if err != nil {
		t.Fatalf("second New: %v", err)
	}
	if first.Attempts != second.Attempts || first.Pending != second.Pending || first.PreemptionVictims != second.PreemptionVictims {
		t.Fatal("second New made new collectors instead of sharing the registered ones")
	}
}

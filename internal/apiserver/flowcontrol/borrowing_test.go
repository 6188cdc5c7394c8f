package flowcontrol

import (
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// TestBorrowingLimits: a level's lendable and borrowing percentages give
// it the seat bounds upstream's borrowing moves its limit between
// (apiserver_flowcontrol_{nominal,lower,upper}_limit_seats).
func TestBorrowingLimits(t *testing.T) {
	e := newEnv(t, nil, nil)
	pl := limitedLevel("borrower", 30, &flowcontrolv1.QueuingConfiguration{Queues: 8, HandSize: 2, QueueLengthLimit: 10})
	pl.Spec.Limited.LendablePercent = ptr(int32(50))
	pl.Spec.Limited.BorrowingLimitPercent = ptr(int32(100))
	e.create("prioritylevelconfigurations", pl)
	gauge := func(name string) float64 {
		families, err := e.metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "priority_level" && l.GetValue() == "borrower" {
						return m.GetGauge().GetValue()
					}
				}
			}
		}
		return -1
	}
	waitFor(t, "borrower's limits", func() bool { return gauge("apiserver_flowcontrol_nominal_limit_seats") > 0 })
	nominal := gauge("apiserver_flowcontrol_nominal_limit_seats")
	lower, upper := gauge("apiserver_flowcontrol_lower_limit_seats"), gauge("apiserver_flowcontrol_upper_limit_seats")
	// 50 server seats, 30 of 275 shares: 6 nominal; lends up to half,
	// borrows up to as many again.
	if nominal != 6 || lower != 3 || upper != 12 {
		t.Errorf("nominal %v, lower %v, upper %v; want 6, 3, 12", nominal, lower, upper)
	}
	if cur := gauge("apiserver_flowcontrol_current_limit_seats"); cur < lower || cur > upper {
		t.Errorf("current limit %v outside [%v, %v]", cur, lower, upper)
	}
}

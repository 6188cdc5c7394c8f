package scenarios

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
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

func TestPaceBounds(t *testing.T) {
	// pace stops at maxCalls even at a high rate.
	var n atomic.Int64
	started, _ := pace(t.Context(), 1e6, 4, time.Now().Add(5*time.Second), 50, func(context.Context, int, int64) { n.Add(1) })
	if started != 50 || n.Load() != 50 {
		t.Errorf("started %d, ran %d; want 50", started, n.Load())
	}
	// And at its deadline at a low rate: about rate × duration calls.
	n.Store(0)
	started, _ = pace(t.Context(), 20, 2, time.Now().Add(500*time.Millisecond), 0, func(context.Context, int, int64) { n.Add(1) })
	if started < 8 || started > 11 || n.Load() != started {
		t.Errorf("started %d, ran %d; want about 10", started, n.Load())
	}
}

package sim

import (
	"testing"
	"time"
)

func TestHistogramQuantiles(t *testing.T) {
	h := newDurHist()
	for i := 1; i <= 1000; i++ {
		h.observe(time.Duration(i) * time.Millisecond)
	}
	s := h.snapshot()
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := s.Quantile(tc.q)
		if got < tc.want || float64(got) > 1.1*float64(tc.want) {
			t.Errorf("q%.2f = %v, want within [%v, +10%%]", tc.q, got, tc.want)
		}
	}
	if s.Count() != 1000 || s.Max != time.Second {
		t.Errorf("count %d max %v", s.Count(), s.Max)
	}
	for i := 0; i < 100; i++ {
		h.observe(5 * time.Second)
	}
	recent := h.snapshot().Sub(s)
	if recent.Count() != 100 || recent.Quantile(0.5) < 5*time.Second {
		t.Errorf("recent: count %d p50 %v, want 100 and 5s", recent.Count(), recent.Quantile(0.5))
	}
	if (Histogram{}).Quantile(0.99) != 0 {
		t.Error("empty histogram: want 0")
	}
	h.observe(-time.Second)
	h.observe(time.Hour)
	if got := h.snapshot().Max; got != time.Hour {
		t.Errorf("max %v", got)
	}
}

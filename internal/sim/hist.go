package sim

import (
	"math"
	"sync/atomic"
	"time"
)

// Histogram buckets are geometric, 2^(1/8) (about 9%) apart, from histMin
// up; the first bucket holds everything below histMin and the last
// everything above the range (about 100 s).
const (
	histMin     = 10 * time.Microsecond
	histPerOct  = 8
	histBuckets = 2 + 23*histPerOct
)

// durHist is a lock-free duration histogram precise enough for p50/p99 of
// lateness; Prometheus histograms are too coarse for that and cannot be read
// back cheaply.
type durHist struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64
}

func newDurHist() *durHist { return &durHist{} }

func histBucket(d time.Duration) int {
	if d < histMin {
		return 0
	}
	i := 1 + int(histPerOct*math.Log2(float64(d)/float64(histMin)))
	return min(i, histBuckets-1)
}

// histUpper is bucket i's upper bound.
func histUpper(i int) time.Duration {
	if i == 0 {
		return histMin
	}
	return time.Duration(float64(histMin) * math.Exp2(float64(i)/histPerOct))
}

func (h *durHist) observe(d time.Duration) {
	h.counts[histBucket(d)].Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// snapshot copies the counts.
func (h *durHist) snapshot() Histogram {
	var s Histogram
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Max = time.Duration(h.max.Load())
	return s
}

// Histogram is a snapshot of a duration histogram. Two snapshots of the same
// histogram can be subtracted to get the distribution in between.
type Histogram struct {
	Counts [histBuckets]uint64
	// Max is the largest observation since the start (Sub keeps the newer one's).
	Max time.Duration
}

// Count is the number of observations.
func (h Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding quantile q (0..1),
// at most about 9% above the true value and never above Max; 0 if empty.
func (h Histogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank {
			u := histUpper(i)
			if h.Max > 0 && u > h.Max {
				u = h.Max
			}
			return u
		}
	}
	return h.Max
}

// Sub returns the observations in h that are not in older.
func (h Histogram) Sub(older Histogram) Histogram {
	r := Histogram{Max: h.Max}
	for i := range h.Counts {
		r.Counts[i] = h.Counts[i] - older.Counts[i]
	}
	return r
}

package proxy

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// runner calls fn when triggered, at most once per minInterval and at least
// once per maxInterval: upstream's BoundedFrequencyRunner without bursts.
// Triggers arriving while fn runs or during the minimum wait coalesce into
// one call, which is what batches a burst of informer events into one
// transaction.
type runner struct {
	fn                       func(ctx context.Context)
	minInterval, maxInterval time.Duration
	clock                    clock.Clock
	trigger                  chan struct{}
}

func newRunner(fn func(context.Context), minInterval, maxInterval time.Duration, clk clock.Clock) *runner {
	return &runner{fn: fn, minInterval: minInterval, maxInterval: maxInterval, clock: clk, trigger: make(chan struct{}, 1)}
}

// Run asks for a call soon; it never blocks.
func (r *runner) Run() {
	select {
	case r.trigger <- struct{}{}:
	default:
	}
}

// loop calls fn until ctx ends.
func (r *runner) loop(ctx context.Context) {
	last := r.clock.Now().Add(-r.minInterval)
	for {
		t := r.clock.NewTimer(r.maxInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.trigger:
		case <-t.C():
		}
		t.Stop()
		if wait := r.minInterval - r.clock.Since(last); wait > 0 {
			w := r.clock.NewTimer(wait)
			select {
			case <-ctx.Done():
				w.Stop()
				return
			case <-w.C():
			}
		}
		last = r.clock.Now()
		r.fn(ctx)
	}
}

package procstat

import (
	"sync"
	"time"
)

// Peak follows a process's RSS from StartPeak until Stop and keeps the
// highest value read. VmHWM gives the peak over a process's whole life;
// Peak gives it over one phase of a benchmark.
type Peak struct {
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	peak     int64 // written by the sampling goroutine before it closes done
}

// StartPeak reads pid's RSS (Self: this process's) at once and then every
// interval, in a goroutine that Stop ends.
func StartPeak(pid int, interval time.Duration) *Peak {
	p := &Peak{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if rss, _, err := ReadMemory(pid); err == nil {
				p.peak = max(p.peak, rss)
			}
			select {
			case <-p.quit:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Stop ends the sampling, waits for its goroutine and returns the highest
// RSS read, in bytes (0 if none could be). Stop may be called more than
// once; each call returns the same value.
func (p *Peak) Stop() int64 {
	p.stopOnce.Do(func() { close(p.quit) })
	<-p.done
	return p.peak
}

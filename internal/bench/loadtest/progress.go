package loadtest

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Progress keeps one live status line on a terminal (stderr): the phase,
// its count against its total, the rate, the ETA and whatever the
// scenario adds. It redraws the line in place with a carriage return and
// ends it with a newline when the phase changes or Stop is called.
type Progress struct {
	w        io.Writer
	scenario string
	start    time.Time
	done     atomic.Int64
	mu       struct {
		sync.Mutex
		phase      string
		total      int64
		phaseStart time.Time
		deadline   time.Time
		status     func() string
		drawn      bool
	}
	quit     chan struct{}
	finished chan struct{}
}

// NewProgress starts redrawing every 500 ms; a nil w draws nothing.
func NewProgress(w io.Writer, scenario string) *Progress {
	p := &Progress{w: w, scenario: scenario, start: time.Now(), quit: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(p.finished)
		if w == nil {
			return
		}
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-t.C:
				p.draw(false)
			}
		}
	}()
	return p
}

// Phase starts a new phase counting towards total (0: open-ended) that
// ends by deadline (zero: none; the ETA then comes from the rate). status,
// if not nil, adds scenario-specific counts to the line.
func (p *Progress) Phase(name string, total int64, deadline time.Time, status func() string) {
	p.draw(true)
	p.mu.Lock()
	p.mu.phase, p.mu.total, p.mu.deadline, p.mu.status = name, total, deadline, status
	p.mu.phaseStart = time.Now()
	p.mu.drawn = false
	p.mu.Unlock()
	p.done.Store(0)
}

// Add counts n more done in the current phase.
func (p *Progress) Add(n int64) { p.done.Add(n) }

// Stop ends the line.
func (p *Progress) Stop() {
	select {
	case <-p.quit:
		return
	default:
	}
	close(p.quit)
	<-p.finished
	p.draw(true)
}

// Line is the current status line (without the carriage return).
func (p *Progress) Line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lineLocked(time.Now())
}

func (p *Progress) lineLocked(now time.Time) string {
	done := p.done.Load()
	el := now.Sub(p.mu.phaseStart)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s [%s]", p.scenario, p.mu.phase, now.Sub(p.start).Round(time.Second))
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el.Seconds()
	}
	// A phase that only waits (nothing counted, no total) shows no count.
	if p.mu.total > 0 || done > 0 {
		if p.mu.total > 0 {
			fmt.Fprintf(&b, " %d/%d", done, p.mu.total)
		} else {
			fmt.Fprintf(&b, " %d", done)
		}
		fmt.Fprintf(&b, " %.0f/s", rate)
	}
	eta := time.Duration(-1)
	if !p.mu.deadline.IsZero() {
		eta = max(0, p.mu.deadline.Sub(now))
	}
	if p.mu.total > 0 && rate > 0 {
		byRate := time.Duration(float64(p.mu.total-done) / rate * float64(time.Second))
		if eta < 0 || byRate < eta {
			eta = byRate
		}
	}
	if eta >= 0 {
		fmt.Fprintf(&b, " ETA %s", eta.Round(time.Second))
	}
	if p.mu.status != nil {
		if s := p.mu.status(); s != "" {
			b.WriteString(" | ")
			b.WriteString(s)
		}
	}
	return b.String()
}

// draw redraws the line; final ends it with a newline.
func (p *Progress) draw(final bool) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.phase == "" {
		return
	}
	if final && !p.mu.drawn && p.done.Load() == 0 {
		return
	}
	line := p.lineLocked(time.Now())
	// \033[K clears what a longer previous line left behind.
	end := ""
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.w, "\r%s\033[K%s", line, end)
	p.mu.drawn = !final
	if final {
		p.mu.phase = ""
	}
}

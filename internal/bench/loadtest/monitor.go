package loadtest

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/myriad-k8s/myriad/internal/procstat"
)

// Totals are counts accumulated since a Monitor started, across server
// restarts (a restart resets the server's counters; the monitor keeps
// adding).
type Totals struct {
	At time.Time
	// Requests is the apiserver_request_total increase by series.
	Requests map[RequestKey]float64
	// CPUSeconds is the server process's CPU time used.
	CPUSeconds float64
}

// Sum adds the requests match accepts (nil: all).
func (t Totals) Sum(match func(RequestKey) bool) float64 {
	var n float64
	for k, v := range t.Requests {
		if match == nil || match(k) {
			n += v
		}
	}
	return n
}

// Since is t minus earlier: what happened between the two.
func (t Totals) Since(earlier Totals) Totals {
	d := Totals{At: t.At, Requests: map[RequestKey]float64{}, CPUSeconds: t.CPUSeconds - earlier.CPUSeconds}
	for k, v := range t.Requests {
		if x := v - earlier.Requests[k]; x != 0 {
			d.Requests[k] = x
		}
	}
	return d
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	Metrics *MetricsClient
	// PID returns the server's PID, or 0 when it is not a local process
	// the bench knows; CPU and RSS then come from the process_* metrics.
	PID func() int
	// Interval between samples. Default 1 s.
	Interval time.Duration
	// Start is time zero of the series.
	Start time.Time
}

// Monitor samples the server's /metrics and process every Interval and
// keeps the series the reports plot: server CPU (cores), RSS (MiB), and
// mutating and read request rates (per second).
type Monitor struct {
	cfg MonitorConfig
	// quit ends the sampling loop without cancelling a scrape in flight
	// (a cancelled scrape the server already answered would be lost).
	quit chan struct{}
	done chan struct{}
	// scrapeMu serializes Mark: each scrape must be folded in before the
	// next starts, or a slow scrape folded after a newer one would look
	// like a counter reset (and be counted twice).
	scrapeMu sync.Mutex
	mu       struct {
		sync.Mutex
		prev      *Scrape
		prevCPU   float64 // last CPU seconds of the current process
		prevPID   int
		started   bool
		totals    Totals
		lastAt    time.Time
		lastTotal Totals
		cpu, rss  Series
		writes    Series
		reads     Series
		errors    int
	}
}

// StartMonitor starts sampling until Stop.
func StartMonitor(ctx context.Context, cfg MonitorConfig) *Monitor {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.PID == nil {
		cfg.PID = func() int { return 0 }
	}
	m := &Monitor{cfg: cfg, quit: make(chan struct{}), done: make(chan struct{})}
	m.mu.totals = Totals{Requests: map[RequestKey]float64{}}
	m.mu.cpu = Series{Name: "server cpu", Unit: "cores"}
	m.mu.rss = Series{Name: "server rss", Unit: "MiB"}
	m.mu.writes = Series{Name: "server writes", Unit: "req/s"}
	m.mu.reads = Series{Name: "server reads", Unit: "req/s"}
	_, _ = m.Mark(ctx)
	go func() {
		defer close(m.done)
		t := time.NewTicker(cfg.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-m.quit:
				return
			case <-t.C:
				_, _ = m.Mark(ctx)
			}
		}
	}()
	return m
}

// Stop ends sampling and returns the totals after one last sample. A
// scrape in flight is let finish (each is bounded at 10 s), so what the
// server answered is counted. Call it once.
func (m *Monitor) Stop(ctx context.Context) Totals {
	close(m.quit)
	<-m.done
	t, err := m.Mark(ctx)
	if err != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.copyTotalsLocked()
	}
	return t
}

// Mark samples now and returns the totals so far. On a failed scrape (the
// server restarting) it returns the totals of the last good one and the
// error.
func (m *Monitor) Mark(ctx context.Context) (Totals, error) {
	m.scrapeMu.Lock()
	defer m.scrapeMu.Unlock()
	s, err := m.cfg.Metrics.Scrape(ctx)
	pid := m.cfg.PID()
	var proc procstat.Sample
	var procErr error = errNoPID
	if pid > 0 {
		proc, procErr = procstat.Read(pid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.mu.errors++
		return m.copyTotalsLocked(), err
	}
	m.addLocked(s, pid, proc, procErr == nil)
	return m.copyTotalsLocked(), nil
}

type noPID struct{}

func (noPID) Error() string { return "no server PID" }

var errNoPID error = noPID{}

func (m *Monitor) copyTotalsLocked() Totals {
	t := m.mu.totals
	t.Requests = maps.Clone(t.Requests)
	return t
}

// addLocked folds scrape s into the totals and series.
func (m *Monitor) addLocked(s Scrape, pid int, proc procstat.Sample, haveProc bool) {
	restarted := m.mu.prev != nil && (s.StartTime != m.mu.prev.StartTime || s.CPUSeconds < m.mu.prev.CPUSeconds)
	if m.mu.prev != nil {
		for k, v := range s.Requests {
			d := v
			if !restarted {
				d = v - m.mu.prev.Requests[k]
			}
			if d > 0 {
				m.mu.totals.Requests[k] += d
			}
		}
	}
	// CPU: from /proc when the PID is known (exact, and available while
	// the server cannot answer), else from process_cpu_seconds_total.
	cpu := s.CPUSeconds
	rss := s.RSSBytes
	if haveProc {
		cpu, rss = proc.CPU.Seconds(), float64(proc.RSS)
	}
	if m.mu.started {
		d := cpu - m.mu.prevCPU
		if restarted || pid != m.mu.prevPID || d < 0 {
			d = cpu // a new process: all its CPU is new
		}
		m.mu.totals.CPUSeconds += d
	}
	m.mu.started = true
	m.mu.prevCPU, m.mu.prevPID = cpu, pid
	m.mu.totals.At = s.At
	t := s.At.Sub(m.cfg.Start).Seconds()
	if !m.mu.lastAt.IsZero() {
		dt := s.At.Sub(m.mu.lastAt).Seconds()
		if dt > 0 {
			cur := m.mu.totals
			m.mu.cpu.Points = append(m.mu.cpu.Points, Point{T: t, V: (cur.CPUSeconds - m.mu.lastTotal.CPUSeconds) / dt})
			w := cur.Sum(isWrite) - m.mu.lastTotal.Sum(isWrite)
			r := cur.Sum(isRead) - m.mu.lastTotal.Sum(isRead)
			m.mu.writes.Points = append(m.mu.writes.Points, Point{T: t, V: w / dt})
			m.mu.reads.Points = append(m.mu.reads.Points, Point{T: t, V: r / dt})
		}
	}
	if rss > 0 {
		m.mu.rss.Points = append(m.mu.rss.Points, Point{T: t, V: rss / (1 << 20)})
	}
	m.mu.lastAt = s.At
	m.mu.lastTotal = m.copyTotalsLocked()
	m.mu.prev = &s
}

func isWrite(k RequestKey) bool { return IsMutating(k.Verb) }

func isRead(k RequestKey) bool { return k.Verb == "GET" || k.Verb == "LIST" }

// Series returns copies of the sampled series: server cpu, server rss,
// server writes, server reads.
func (m *Monitor) Series() []Series {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Series
	for _, s := range []Series{m.mu.cpu, m.mu.rss, m.mu.writes, m.mu.reads} {
		s.Points = append([]Point(nil), s.Points...)
		out = append(out, s)
	}
	return out
}

// ScrapeErrors is the number of failed scrapes (e.g. while the server was
// down).
func (m *Monitor) ScrapeErrors() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.errors
}

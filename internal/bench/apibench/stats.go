package apibench

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/procstat"
)

// runN performs op n times from w goroutines and returns the calls'
// statistics; op returns how many items the call returned. The first error
// stops the run.
func runN(ctx context.Context, b *bench, name string, n, w int, op func(ctx context.Context, i int) (int, error)) (*Stat, error) {
	lat := make([]time.Duration, n)
	var (
		next, done, items atomic.Int64
		wg                sync.WaitGroup
		firstErr          error
		errOnce           sync.Once
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := benchutil.ReportProgress(b.cfg.Progress, name, n, &done)
	cpu0 := b.cpu()
	start := time.Now()
	for range min(w, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				k, err := op(ctx, i)
				lat[i] = time.Since(t0)
				done.Add(1)
				items.Add(int64(k))
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := b.cpu()
	stopProgress()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st := newStat(name, lat, elapsed)
	st.setCPU(cpu0, cpu1)
	if n > 0 {
		st.Items = float64(items.Load()) / float64(n)
	}
	return st, nil
}

// newStat summarizes calls that took lat and elapsed in total.
func newStat(name string, lat []time.Duration, elapsed time.Duration) *Stat {
	st := &Stat{Name: name, Calls: len(lat), Time: elapsed}
	if len(lat) == 0 {
		return st
	}
	st.PerSec = float64(len(lat)) / elapsed.Seconds()
	s := slices.Clone(lat)
	slices.Sort(s)
	st.P50, st.P90, st.P99 = benchutil.Quantile(s, 0.50), benchutil.Quantile(s, 0.90), benchutil.Quantile(s, 0.99)
	st.Max = s[len(s)-1]
	return st
}

// cpuReading is the CPU time (user+system) the server and this process
// have used so far; ok fields say whether each could be read.
type cpuReading struct {
	server, self     time.Duration
	serverOK, selfOK bool
}

// setCPU records the CPU the calls took between two readings.
func (s *Stat) setCPU(before, after cpuReading) {
	if s.Calls == 0 {
		return
	}
	if before.serverOK && after.serverOK {
		s.ServerCPU = after.server - before.server
		s.CPUPerCall = s.ServerCPU / time.Duration(s.Calls)
	}
	if before.selfOK && after.selfOK {
		s.ClientCPUPerCall = (after.self - before.self) / time.Duration(s.Calls)
	}
}

// cpu reads the server's CPU time (this process's if the server is
// in-process, ServerPID's if set) and, for a server in another process,
// this process's: the bench client's own cost, which shares the machine's
// cores with a local server.
func (b *bench) cpu() cpuReading {
	var r cpuReading
	if d, err := procstat.ReadCPU(procstat.Self); err == nil {
		r.self, r.selfOK = d, true
	}
	switch {
	case b.inProcess:
		r.server, r.serverOK = r.self, r.selfOK
		r.selfOK = false
	case b.cfg.ServerPID > 0:
		d, err := procstat.ReadCPU(b.cfg.ServerPID)
		r.server, r.serverOK = d, err == nil
	}
	return r
}

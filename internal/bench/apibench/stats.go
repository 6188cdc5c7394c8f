package apibench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
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

// procStatus is the memory part of /proc/PID/status, in bytes.
type procStatus struct{ rss, hwm int64 }

// readProcStatus reads /proc/PID/status; pid 0 is this process.
func readProcStatus(pid int) (procStatus, error) {
	path := "/proc/self/status"
	if pid > 0 {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	f, err := os.Open(path)
	if err != nil {
		return procStatus{}, fmt.Errorf("apibench: %w", err)
	}
	defer f.Close()
	var st procStatus
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			st.rss = kb << 10
		case "VmHWM":
			st.hwm = kb << 10
		}
	}
	return st, sc.Err()
}

// rssSampler records the highest RSS of a process, sampled every 5 ms.
type rssSampler struct {
	quit chan struct{}
	peak chan int64
}

func startRSSSampler(pid int) *rssSampler {
	s := &rssSampler{quit: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if st, err := readProcStatus(pid); err == nil {
				peak = max(peak, st.rss)
			}
			select {
			case <-s.quit:
				s.peak <- peak
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peak RSS seen.
func (s *rssSampler) stop() int64 {
	close(s.quit)
	return <-s.peak
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
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		r.self, r.selfOK = time.Duration(ru.Utime.Nano()+ru.Stime.Nano()), true
	}
	switch {
	case b.inProcess:
		r.server, r.serverOK = r.self, r.selfOK
		r.selfOK = false
	case b.cfg.ServerPID > 0:
		d, err := procCPU(b.cfg.ServerPID)
		r.server, r.serverOK = d, err == nil
	}
	return r
}

// procCPU reads utime+stime of pid from /proc/PID/stat (in clock ticks of
// 1/100 s, USER_HZ on Linux).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("apibench: %w", err)
	}
	// The command name (field 2) may hold spaces; fields after it are
	// space-separated, starting at field 3 (state).
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("apibench: unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("apibench: unexpected /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("apibench: unexpected /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * (time.Second / 100), nil
}

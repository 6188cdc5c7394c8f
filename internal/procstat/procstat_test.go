package procstat

import (
	"errors"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name      string
		stat      string
		wantTicks int64
		wantErr   bool
	}{
		{"plain", "1234 (myriad) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 12 0 100 0 0", 325, false},
		{"name with spaces and parens", "1234 (my (odd) name) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 1 0 0", 10, false},
		{"no command name", "1234 myriad S 1", 0, true},
		{"too few fields", "1234 (myriad) S 1 2 3", 0, true},
		{"utime not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 3 0", 0, true},
		{"stime not a number", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 3 y 0", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStat([]byte(tc.stat))
			if tc.wantErr {
				if !errors.Is(err, errFormat) {
					t.Fatalf("got %d, %v; want an errFormat", got, err)
				}
				return
			}
			if err != nil || got != tc.wantTicks {
				t.Fatalf("got %d, %v; want %d", got, err, tc.wantTicks)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name              string
		status            string
		wantRSS, wantPeak int64
		wantErr           bool
	}{
		{"both", "Name:\tmyriad\nVmPeak:\t 9999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t12\n", 1 << 20, 2 << 20, false},
		{"no VmHWM", "VmRSS:\t4 kB\n", 4096, 0, false},
		{"no VmRSS (zombie)", "Name:\tx\nState:\tZ (zombie)\n", 0, 0, true},
		{"empty value", "VmRSS:\n", 0, 0, true},
		{"not a number", "VmRSS:\tlots kB\n", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rss, peak, err := parseStatus([]byte(tc.status))
			if tc.wantErr {
				if !errors.Is(err, errFormat) {
					t.Fatalf("got %d, %d, %v; want an errFormat", rss, peak, err)
				}
				return
			}
			if err != nil || rss != tc.wantRSS || peak != tc.wantPeak {
				t.Fatalf("got %d, %d, %v; want %d, %d", rss, peak, err, tc.wantRSS, tc.wantPeak)
			}
		})
	}
}

// TestReadThisProcess reads this process both ways, as Self and by its
// PID: the two must agree on what they mean.
func TestReadThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc:", err)
	}
	// Use more than two of /proc/PID/stat's 10 ms ticks of CPU first.
	for {
		if cpu, err := ReadCPU(Self); err != nil || cpu > 30*time.Millisecond {
			break
		}
	}
	for _, tc := range []struct {
		name string
		pid  int
	}{{"self", Self}, {"by pid", os.Getpid()}} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Read(tc.pid)
			if err != nil {
				t.Fatal(err)
			}
			// A Go test binary has a few MiB resident and has used some CPU.
			if s.RSS < 1<<20 || s.PeakRSS < s.RSS || s.CPU <= 0 {
				t.Errorf("%+v: want RSS ≥ 1 MiB, PeakRSS ≥ RSS, CPU > 0", s)
			}
		})
	}
}

func TestReadMissingProcess(t *testing.T) {
	// PIDs are at most 2^22 on Linux, so this one cannot exist.
	if _, err := Read(1 << 30); err == nil {
		t.Fatal("read a process that does not exist")
	}
}

func TestPeak(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc:", err)
	}
	// Stop right away: the first read happens before any wait, so the
	// result does not depend on the interval.
	p := StartPeak(Self, time.Hour)
	peak := p.Stop()
	if peak < 1<<20 {
		t.Errorf("peak %d, want ≥ 1 MiB", peak)
	}
	if again := p.Stop(); again != peak {
		t.Errorf("second Stop returned %d, want %d", again, peak)
	}
}

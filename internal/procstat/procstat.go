package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Self is the PID that names this process to Read, ReadCPU, ReadMemory and
// StartPeak.
const Self = 0

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// Sample is one reading of a process.
type Sample struct {
	// CPU is the user+system CPU time of all the process's threads so far.
	CPU time.Duration
	// RSS is the resident set size in bytes (VmRSS).
	RSS int64
	// PeakRSS is the highest RSS the process has had (VmHWM), in bytes.
	PeakRSS int64
}

// Read samples process pid (Self: this process). It fails if either the
// CPU time or the memory cannot be read (no /proc, no such process).
func Read(pid int) (Sample, error) {
	cpu, err := ReadCPU(pid)
	if err != nil {
		return Sample{}, err
	}
	rss, peak, err := ReadMemory(pid)
	if err != nil {
		return Sample{}, err
	}
	return Sample{CPU: cpu, RSS: rss, PeakRSS: peak}, nil
}

// ReadCPU returns process pid's user+system CPU time so far (Self: this
// process, to the microsecond; another, to the 10 ms clock tick).
func ReadCPU(pid int) (time.Duration, error) {
	if pid == Self {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			return 0, fmt.Errorf("procstat: getrusage: %w", err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
	}
	path := "/proc/" + strconv.Itoa(pid) + "/stat"
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("procstat: %w", err)
	}
	ticks, err := parseStat(raw)
	if err != nil {
		return 0, fmt.Errorf("procstat: %s: %w", path, err)
	}
	return time.Duration(ticks) * (time.Second / clockTicks), nil
}

// ReadMemory returns process pid's resident set and its peak, in bytes
// (Self: this process).
func ReadMemory(pid int) (rss, peak int64, err error) {
	path := "/proc/self/status"
	if pid != Self {
		path = "/proc/" + strconv.Itoa(pid) + "/status"
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: %w", err)
	}
	rss, peak, err = parseStatus(raw)
	if err != nil {
		return 0, 0, fmt.Errorf("procstat: %s: %w", path, err)
	}
	return rss, peak, nil
}

// errFormat reports a /proc file this package cannot read.
var errFormat = errors.New("unexpected format")

// parseStat returns utime+stime, in clock ticks, from /proc/PID/stat. The
// command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name", errFormat)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields after the command name", errFormat, len(f))
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: utime: %w", errFormat, err)
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: stime: %w", errFormat, err)
	}
	return u + s, nil
}

// parseStatus returns VmRSS and VmHWM, in bytes, from /proc/PID/status. A
// process without VmRSS (a zombie, a kernel thread) is an error; a missing
// VmHWM reads as 0.
func parseStatus(status []byte) (rss, peak int64, err error) {
	haveRSS := false
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(val) // "12345 kB"
		if len(f) == 0 {
			return 0, 0, fmt.Errorf("%w: empty %s", errFormat, key)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: %s: %w", errFormat, key, err)
		}
		if key == "VmRSS" {
			rss, haveRSS = kb<<10, true
		} else {
			peak = kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if !haveRSS {
		return 0, 0, fmt.Errorf("%w: no VmRSS", errFormat)
	}
	return rss, peak, nil
}

package sim

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processUsage returns this process's user+system CPU seconds and resident
// memory in bytes (0 if /proc is not there).
func processUsage() (cpuSeconds float64, rss uint64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		cpuSeconds = float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
	}
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				rss = pages * uint64(os.Getpagesize())
			}
		}
	}
	return cpuSeconds, rss
}

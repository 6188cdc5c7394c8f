package benchutil

import (
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sync/atomic"
	"time"
)

// ReportProgress prints phase progress to w every 5 s until the returned
// stop function is called; total 0 means open-ended. A nil w prints
// nothing.
func ReportProgress(w io.Writer, phase string, total int, done *atomic.Int64) (stop func()) {
	if w == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		start := time.Now()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				d := int(done.Load())
				rate := float64(d) / time.Since(start).Seconds()
				if total > 0 {
					fmt.Fprintf(w, "%s: %d/%d (%.0f/s)\n", phase, min(d, total), total, rate)
				} else {
					fmt.Fprintf(w, "%s: %d (%.0f/s)\n", phase, d, rate)
				}
			}
		}
	}()
	return func() { close(quit); <-finished }
}

// Quantile is the nearest-rank quantile of sorted (ascending, non-empty):
// the smallest value with at least q of the samples at or below it.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	return sorted[max(0, int(math.Ceil(q*float64(len(sorted))))-1)]
}

// DirSize is the total size of the regular files under dir.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		return nil
	})
	return total, err
}

package storebench

import (
	"fmt"
	"io"
	"time"
)

// Write prints r as the few lines `myriad bench store` shows.
func (r Result) Write(w io.Writer) error {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	if r.Preloaded > 0 {
		p("preload: %d objects in %s (%.0f writes/s)\n", r.Preloaded, r.PreloadTime.Round(time.Millisecond), r.PreloadPerSec)
	}
	kind := "creates"
	if r.Updates {
		kind = "updates"
	}
	if r.UpdateSet > 0 {
		kind = fmt.Sprintf("updates of ~%d objects", r.UpdateSet)
	}
	p("writes:  %d %s at ~%d objects: %.0f writes/s, p50 %s, p99 %s, p99.9 %s, max %s\n",
		r.Writes, kind, r.ObjectsAtMeasure, r.WritesPerSec, ms(r.WriteP50), ms(r.WriteP99), ms(r.WriteP999), ms(r.WriteMax))
	if r.Reads > 0 {
		p("reads:   %d gets: %.0f reads/s, p50 %s, p99 %s\n", r.Reads, r.ReadsPerSec, ms(r.ReadP50), ms(r.ReadP99))
	}
	if r.ReopenTime > 0 {
		p("reopen:  %s\n", r.ReopenTime.Round(time.Millisecond))
	}
	if r.ListTime > 0 {
		p("list:    %d objects in %s after reopening\n", r.ListObjects, r.ListTime.Round(time.Millisecond))
	}
	if r.DiskBytes > 0 {
		p("disk:    %.1f MiB\n", float64(r.DiskBytes)/(1<<20))
	}
	return err
}

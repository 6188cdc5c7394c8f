package schedbench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Write prints the markdown report.
func (r *Result) Write(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	p("# myriad bench scheduler\n\n")
	p("in-process scheduler core (no API server; bindings recorded in memory); GOMAXPROCS %d, %d filter goroutines; %d ReplicaSet-like templates; %s\n\n",
		r.GoMaxProcs, r.Parallelism, r.Templates, r.Start.Format(time.RFC3339))
	p("pods/s is scheduled pods over the scheduling time; with enqueue it also counts turning pods into queue entries (requests, equivalence class), which the informer handler does. pods/CPU-s divides by the process's CPU time while scheduling instead (steadier on a shared machine).\n\n")
	p("| nodes | pods | mode | scheduled | unschedulable | enqueue | schedule | pods/s | pods/s with enqueue | pods/CPU-s | CPU fraction mean | stddev | min | max |\n")
	p("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Runs {
		pods := fmt.Sprintf("%d", x.Pods)
		if x.Pods < x.Scenario.Pods {
			pods = fmt.Sprintf("%d (capped from %d)", x.Pods, x.Scenario.Pods)
		}
		withEnqueue := float64(x.Scheduled) / (x.Enqueue + x.Schedule).Seconds()
		p("| %d | %s | %s | %d | %d | %s | %s | %.0f | %.0f | %.0f | %.3f | %.3f | %.3f | %.3f |\n", x.Scenario.Nodes, pods, x.Mode.Name,
			x.Scheduled, x.Unschedulable, x.Enqueue.Round(time.Millisecond), x.Schedule.Round(time.Millisecond), x.PodsPerSec, withEnqueue, x.PodsPerCPUSec,
			x.CPUMean, x.CPUStddev, x.CPUMin, x.CPUMax)
	}
	return err
}

// WriteFiles writes report.md and results.json into dir.
func (r *Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench output dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	if err := r.Write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644)
}

package apibench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Write prints r as the markdown report `myriad bench api` shows.
func (r Result) Write(w io.Writer) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	where := "external"
	if r.InProcess {
		where = "in-process (client and server share the process)"
	}
	p("# myriad bench api\n\n")
	p("server %s, %s; GOMAXPROCS %d; %s\n", r.Server, where, r.GoMaxProcs, r.Start.Format(time.RFC3339))
	client := "answers checked, not decoded"
	if r.TypedClient {
		client = "typed clientset, answers decoded"
	}
	p("%d pods over %d nodes, %d namespaces, %d app labels; %d create workers; protobuf; pod requests: %s\n\n",
		r.Pods, r.Nodes, r.Namespaces, r.Apps, r.Workers, client)
	p("| phase | calls | items/call | calls/s | p50 | p90 | p99 | max | server CPU/call | client CPU/call | target |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range []*Stat{r.Create, r.Get, r.ListByNode, r.ListByLabel, r.ListByNamespace, r.Leases} {
		if s == nil {
			continue
		}
		verdict := ""
		if s.Target != "" {
			verdict = s.Target + " ✘"
			if s.Met {
				verdict = s.Target + " ✔"
			}
		}
		calls := fmt.Sprintf("%d", s.Calls)
		if s.Errors > 0 {
			calls += fmt.Sprintf(" (%d conflicts)", s.Errors)
		}
		items := ""
		if s.Items > 0 {
			items = fmt.Sprintf("%.0f", s.Items)
		}
		cpu := micros(s.CPUPerCall)
		p("| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", s.Name, calls, items, s.PerSec,
			ms(s.P50), ms(s.P90), ms(s.P99), ms(s.Max), cpu, micros(s.ClientCPUPerCall), verdict)
	}
	if len(r.ListAll) > 0 {
		p("\n| unfiltered LIST of all pods | bytes | time | server RSS before | server peak RSS during |\n")
		p("|---|---:|---:|---:|---:|\n")
		for _, l := range r.ListAll {
			p("| %s | %s | %s | %s | %s |\n", l.ContentType, mib(l.Bytes), ms(l.Time), mib(l.RSSBefore), mib(l.PeakRSS))
		}
	}
	if r.IdleRSS > 0 || r.IdleHeap > 0 {
		p("\nidle with everything loaded: RSS %s; Go heap allocated %s, held %s, of which returned to the OS %s",
			mib(r.IdleRSS), mib(r.IdleHeap), mib(r.IdleHeapSys), mib(r.IdleHeapReleased))
		if r.InProcess {
			p(" (client included)")
		}
		p("\n")
	}
	if r.InProcess {
		p("\n(in-process: server CPU/call includes the client's)\n")
	}
	if r.PeakRSS > 0 {
		p("peak RSS of the whole run (VmHWM, client included): %s\n", mib(r.PeakRSS))
	}
	return err
}

// WriteFiles writes report.md and results.json into dir.
func (r Result) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("apibench: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("apibench: %w", err)
	}
	werr := r.Write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("apibench: writing report: %w", werr)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("apibench: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("apibench: %w", err)
	}
	return nil
}

func ms(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func mib(n int64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

// micros formats a per-call CPU time; "–" when it was not measured.
func micros(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

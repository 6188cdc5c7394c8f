package loadtest

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteReport writes r's report directory: the plots asked for (recorded
// in r.Plots), results.json and report.md.
func WriteReport(dir string, r *Result, plots []PlotSpec) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report dir: %w", err)
	}
	r.Plots = nil
	for _, spec := range plots {
		ok, err := WritePlot(dir, r, spec)
		if err != nil {
			return err
		}
		if ok {
			r.Plots = append(r.Plots, PlotFile{File: spec.File, Title: spec.Title, Series: spec.Series})
		}
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("results.json: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("report.md: %w", err)
	}
	werr := WriteMarkdown(f, r)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("report.md: %w", werr)
	}
	return nil
}

// maxRequestRows bounds the server-request table in report.md.
const maxRequestRows = 25

// WriteMarkdown writes r as report.md.
func WriteMarkdown(w io.Writer, r *Result) error {
	var err error
	p := func(format string, args ...any) {
		if err == nil {
			_, err = fmt.Fprintf(w, format, args...)
		}
	}
	verdict := "PASS"
	if !r.Passed() {
		verdict = "FAIL"
	}
	p("# myriad bench %s: %s\n\n", r.Scenario, verdict)
	p("- command: `%s`\n", r.Command)
	p("- date: %s, duration %s\n", r.Start.UTC().Format(time.RFC3339), r.Duration.D().Round(time.Millisecond))
	m := r.Machine
	p("- machine: %s, %s/%s, %d CPUs, %s memory, %s\n", m.Hostname, m.OS, m.Arch, m.CPUs, bytesHuman(float64(m.MemoryBytes)), m.GoVersion)
	how := "given by --kubeconfig"
	if r.Server.StartedByBench {
		how = "`myriad up` started by the bench"
	}
	p("- server: %s (%s", r.Server.Host, how)
	if r.Server.PID > 0 {
		p(", PID %d: CPU and RSS from /proc", r.Server.PID)
	} else {
		p("; CPU and RSS from its process_* metrics")
	}
	p(")\n")
	if len(r.Params) > 0 {
		keys := slices.Sorted(maps.Keys(r.Params))
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+r.Params[k])
		}
		p("- parameters: %s\n", strings.Join(kv, ", "))
	}
	if len(r.Figures) > 0 {
		p("\n## Key figures\n\n| figure | value |\n|---|---:|\n")
		for _, f := range r.Figures {
			p("| %s | %s |\n", f.Label, FormatValue(f.Value, f.Unit))
		}
	}
	if len(r.Verdicts) > 0 {
		p("\n## Verdicts\n\n| check | target | observed | verdict |\n|---|---|---|---|\n")
		for _, v := range r.Verdicts {
			p("| %s | %s | %s | %s |\n", v.Name, v.Target, v.Observed, passFail(v.Pass))
		}
	}
	if len(r.Latencies) > 0 {
		p("\n## Call latency\n\n| phase | verb | resource | scope | calls | errors | p50 | p90 | p99 | max | SLO (p99) | verdict |\n")
		p("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, l := range r.Latencies {
			slo, v := "–", ""
			if l.SLO > 0 {
				slo = "≤ " + l.SLO.D().String()
			}
			if l.Pass != nil {
				v = passFail(*l.Pass)
			}
			phase := l.Phase
			if phase == "" {
				phase = "–"
			}
			p("| %s | %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", phase, l.Verb, l.Resource, l.Scope, l.Count,
				errorsCell(l), msCell(l, l.P50), msCell(l, l.P90), msCell(l, l.P99), msCell(l, l.Max), slo, v)
		}
	}
	if len(r.ServerRequests) > 0 {
		p("\n## Requests the server counted during the run\n\n(apiserver_request_total increase; watches count when they end)\n\n")
		p("| verb | resource | scope | code | count |\n|---|---|---|---|---:|\n")
		for i, c := range r.ServerRequests {
			if i == maxRequestRows {
				p("| … %d more series in results.json | | | | |\n", len(r.ServerRequests)-i)
				break
			}
			res := c.Resource
			if c.Subresource != "" {
				res += "/" + c.Subresource
			}
			if res == "" {
				res = "(non-resource)"
			}
			p("| %s | %s | %s | %s | %s |\n", c.Verb, res, c.Scope, c.Code, num(c.Count))
		}
	}
	if len(r.Plots) > 0 {
		p("\n## Plots\n\n")
		for _, pl := range r.Plots {
			p("### %s\n\n![%s](%s)\n\n", pl.Title, pl.Title, pl.File)
		}
	}
	if len(r.Notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	return err
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func errorsCell(l LatencyStat) string {
	if l.Errors == 0 {
		return "0"
	}
	codes := slices.Sorted(maps.Keys(l.Codes))
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%s", l.Codes[c], c))
	}
	return fmt.Sprintf("%d (%s)", l.Errors, strings.Join(parts, ", "))
}

func msCell(l LatencyStat, d Duration) string {
	if l.Count == 0 {
		return "–"
	}
	return FormatValue(d.D().Seconds(), "s")
}

// FormatValue prints v in unit for humans: seconds as ms or s, bytes in
// MiB or GiB, others with sensible precision.
func FormatValue(v float64, unit string) string {
	switch unit {
	case "s":
		if v < 1 {
			return strconv.FormatFloat(v*1000, 'f', 1, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case "bytes":
		return bytesHuman(v)
	case "":
		return num(v)
	}
	return num(v) + " " + unit
}

func num(v float64) string {
	if v == float64(int64(v)) {
		return strconv.FormatInt(int64(v), 10)
	}
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func bytesHuman(v float64) string {
	switch {
	case v >= 1<<30:
		return strconv.FormatFloat(v/(1<<30), 'f', 2, 64) + " GiB"
	case v >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(v/1024, 'f', 1, 64) + " KiB"
}

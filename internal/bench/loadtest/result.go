package loadtest

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// SchemaVersion is results.json's schema version. Bump it when a field
// changes meaning or is removed; adding fields keeps it.
const SchemaVersion = 1

// Result is one scenario run, as written to results.json.
type Result struct {
	SchemaVersion int       `json:"schemaVersion"`
	Scenario      string    `json:"scenario"`
	Command       string    `json:"command"`
	Machine       Machine   `json:"machine"`
	Start         time.Time `json:"start"`
	Duration      Duration  `json:"duration"`
	Server        Server    `json:"server"`
	// Params are the scenario's settings, as given or defaulted.
	Params map[string]string `json:"params"`
	// Figures are the scenario's key numbers; Key is stable across runs
	// so compare can match them.
	Figures []Figure `json:"figures"`
	// Latencies are per verb/resource/scope call latencies with SLO
	// verdicts where upstream sets one.
	Latencies []LatencyStat `json:"latencies,omitempty"`
	// Verdicts are the scenario's pass/fail judgements (SLOs and checks).
	Verdicts []Verdict `json:"verdicts,omitempty"`
	// Series are time series sampled during the run (T in seconds since
	// Start).
	Series []Series `json:"series"`
	// ServerRequests is the increase of the server's
	// apiserver_request_total over the run, by series, largest first.
	ServerRequests []RequestCount `json:"serverRequests,omitempty"`
	// Plots are the plot files written next to results.json.
	Plots []PlotFile `json:"plots,omitempty"`
	Notes []string   `json:"notes,omitempty"`
}

// Machine describes where the bench ran.
type Machine struct {
	Hostname    string `json:"hostname"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memoryBytes,omitempty"`
	GoVersion   string `json:"goVersion"`
}

// Server describes the server under test.
type Server struct {
	Host string `json:"host"`
	// StartedByBench: the bench ran `myriad up` itself (and so knows its
	// PID). PID is 0 when the server's process is not known; its CPU and
	// memory then come from its process_* metrics.
	StartedByBench bool `json:"startedByBench"`
	PID            int  `json:"pid,omitempty"`
}

// Figure is one key number.
type Figure struct {
	Key   string  `json:"key"`
	Label string  `json:"label"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Verdict is one pass/fail judgement.
type Verdict struct {
	Name     string `json:"name"`
	Target   string `json:"target"`
	Observed string `json:"observed"`
	Pass     bool   `json:"pass"`
}

// Series is a named time series.
type Series struct {
	Name   string  `json:"name"`
	Unit   string  `json:"unit"`
	Points []Point `json:"points"`
}

// Point is one sample: T seconds after the run's start, value V.
type Point struct {
	T float64 `json:"t"`
	V float64 `json:"v"`
}

// RequestCount is one apiserver_request_total series' increase.
type RequestCount struct {
	Verb        string  `json:"verb"`
	Resource    string  `json:"resource"`
	Subresource string  `json:"subresource,omitempty"`
	Scope       string  `json:"scope"`
	Code        string  `json:"code"`
	Count       float64 `json:"count"`
}

// PlotFile is one plot written with the report.
type PlotFile struct {
	File   string   `json:"file"`
	Title  string   `json:"title"`
	Series []string `json:"series"`
}

// AddFigure appends a key figure.
func (r *Result) AddFigure(key, label string, v float64, unit string) {
	r.Figures = append(r.Figures, Figure{Key: key, Label: label, Value: v, Unit: unit})
}

// AddVerdict appends a judgement.
func (r *Result) AddVerdict(name, target, observed string, pass bool) {
	r.Verdicts = append(r.Verdicts, Verdict{Name: name, Target: target, Observed: observed, Pass: pass})
}

// Figure returns the figure with key, if any.
func (r *Result) Figure(key string) (Figure, bool) {
	for _, f := range r.Figures {
		if f.Key == key {
			return f, true
		}
	}
	return Figure{}, false
}

// SeriesNamed returns the series called name, if any.
func (r *Result) SeriesNamed(name string) (Series, bool) {
	for _, s := range r.Series {
		if s.Name == name {
			return s, true
		}
	}
	return Series{}, false
}

// Passed reports whether every verdict and SLO passed.
func (r *Result) Passed() bool {
	for _, v := range r.Verdicts {
		if !v.Pass {
			return false
		}
	}
	for _, l := range r.Latencies {
		if l.Pass != nil && !*l.Pass {
			return false
		}
	}
	return true
}

// ReadResult loads a results.json, refusing other schema versions.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema version %d, this myriad reads %d", path, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// LocalMachine describes this machine.
func LocalMachine() Machine {
	m := Machine{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				if _, err := fmt.Sscan(rest, &kb); err == nil {
					m.MemoryBytes = kb * 1024
				}
			}
		}
	}
	return m
}

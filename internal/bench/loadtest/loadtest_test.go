package loadtest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/procstat"
)

func TestSummarize(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	st := Summarize(d)
	for _, tc := range []struct {
		name      string
		got, want time.Duration
	}{
		{"p50", st.P50.D(), 50 * time.Millisecond},
		{"p90", st.P90.D(), 90 * time.Millisecond},
		{"p99", st.P99.D(), 99 * time.Millisecond},
		{"max", st.Max.D(), 100 * time.Millisecond},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if st.Count != 100 {
		t.Errorf("count %d", st.Count)
	}
	if empty := Summarize(nil); empty.Count != 0 || empty.P99 != 0 {
		t.Errorf("empty: %+v", empty)
	}
}

func TestSLOFor(t *testing.T) {
	for _, tc := range []struct {
		k    Key
		want time.Duration
	}{
		{Key{"POST", "pods", "resource"}, time.Second},
		{Key{"DELETE", "configmaps", "resource"}, time.Second},
		{Key{"GET", "pods", "resource"}, time.Second},
		{Key{"LIST", "pods", "namespace"}, 5 * time.Second},
		{Key{"LIST", "pods", "cluster"}, 30 * time.Second},
		{Key{"WATCH", "pods", "cluster"}, 0},
	} {
		if got := SLOFor(tc.k); got != tc.want {
			t.Errorf("SLOFor(%v) = %v, want %v", tc.k, got, tc.want)
		}
	}
}

func TestRecorderStatsAndVerdicts(t *testing.T) {
	r := NewRecorder(time.Now())
	fast := Key{"GET", "pods", "resource"}
	slow := Key{"POST", "pods", "resource"}
	for range 99 {
		r.Observe(fast, 10*time.Millisecond, nil)
		r.Observe(slow, 10*time.Millisecond, nil)
	}
	r.Observe(fast, 20*time.Millisecond, nil)
	r.Observe(slow, 2*time.Second, nil)
	r.Observe(slow, 0, errors.New("connection refused"))
	r.Observe(fast, 0, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x"))
	stats := r.Stats(true)
	if len(stats) != 2 {
		t.Fatalf("%d stats", len(stats))
	}
	byKey := map[Key]LatencyStat{}
	for _, s := range stats {
		byKey[s.Key] = s
	}
	g, p := byKey[fast], byKey[slow]
	if g.Count != 100 || g.Errors != 1 || g.Codes["404"] != 1 || g.Pass == nil || !*g.Pass {
		t.Errorf("GET: %+v (a 404 is the client's doing and does not fail the SLO)", g)
	}
	if p.Count != 100 || p.Errors != 1 || p.Codes["error"] != 1 || p.Pass == nil || *p.Pass {
		t.Errorf("POST: %+v", p)
	}
	if p.P99.D() != 10*time.Millisecond || p.Max.D() != 2*time.Second {
		t.Errorf("POST p99 %v max %v", p.P99.D(), p.Max.D())
	}
}

func TestWindowPercentiles(t *testing.T) {
	var s []sample
	for i := range 20 {
		s = append(s, sample{at: time.Duration(i) * 100 * time.Millisecond, d: time.Duration(i+1) * time.Millisecond})
	}
	got := windowPercentiles(s, time.Second, "x")
	if len(got) != 2 || len(got[0].Points) != 2 {
		t.Fatalf("%+v", got)
	}
	// First window holds 1..10 ms, second 11..20 ms.
	if p := got[1].Points; p[0].V != 10 || p[1].V != 20 || p[0].T != 1 || p[1].T != 2 {
		t.Errorf("p99 points %+v", p)
	}
	if p := got[0].Points; p[0].V != 5 || p[1].V != 15 {
		t.Errorf("p50 points %+v", p)
	}
}

const metricsText = `# HELP apiserver_request_total Counter.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PUT",version="v1"} 3
apiserver_request_total{code="429",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 2
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1.048576e+08
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7e+09
# TYPE apiserver_current_inflight_requests gauge
apiserver_current_inflight_requests{request_kind="mutating"} 2
apiserver_current_inflight_requests{request_kind="readOnly"} 3
# TYPE apiserver_longrunning_requests gauge
apiserver_longrunning_requests{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="WATCH",version="v1"} 4
apiserver_longrunning_requests{component="apiserver",group="",resource="leases",scope="namespace",subresource="",verb="WATCH",version="v1"} 2
`

func TestParseMetrics(t *testing.T) {
	s, err := ParseMetrics(strings.NewReader(metricsText))
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasProcess || s.CPUSeconds != 12.5 || s.RSSBytes != 100<<20 || s.StartTime != 1.7e9 || s.Inflight != 5 || s.Watches != 6 {
		t.Errorf("process figures: %+v", s)
	}
	for _, tc := range []struct {
		name  string
		match func(RequestKey) bool
		want  float64
	}{
		{"all", nil, 52},
		{"mutating", func(k RequestKey) bool { return IsMutating(k.Verb) }, 45},
		{"pod creates ok", func(k RequestKey) bool { return k.Verb == "POST" && k.Code == "201" }, 40},
		{"status", func(k RequestKey) bool { return k.Subresource == "status" }, 3},
		{"429", func(k RequestKey) bool { return k.Code == "429" }, 2},
	} {
		if got := s.Sum(tc.match); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("not metrics {")); err == nil {
		t.Error("garbage parsed")
	}
}

// TestMonitorAccumulatesAcrossRestart checks that a restart (counters back
// near zero, a new start time) adds the new process's counts instead of
// subtracting.
func TestMonitorAccumulatesAcrossRestart(t *testing.T) {
	start := time.Now()
	m := &Monitor{cfg: MonitorConfig{Start: start, PID: func() int { return 0 }}}
	m.mu.totals = Totals{Requests: map[RequestKey]float64{}}
	post := RequestKey{Verb: "POST", Resource: "pods", Scope: "resource", Code: "201"}
	scr := func(sec int, n, cpu, startTime float64) Scrape {
		return Scrape{At: start.Add(time.Duration(sec) * time.Second), Requests: map[RequestKey]float64{post: n},
			CPUSeconds: cpu, RSSBytes: 1 << 20, HasProcess: true, StartTime: startTime}
	}
	for _, s := range []Scrape{scr(0, 100, 10, 1), scr(1, 150, 11, 1), scr(2, 20, 0.5, 2), scr(3, 30, 1, 2)} {
		m.addLocked(s, 0, procstat.Sample{}, false)
	}
	tot := m.copyTotalsLocked()
	if got := tot.Requests[post]; got != 50+20+10 {
		t.Errorf("requests %v, want 80", got)
	}
	if tot.CPUSeconds != 1+0.5+0.5 {
		t.Errorf("cpu %v, want 2", tot.CPUSeconds)
	}
	if n := len(m.mu.writes.Points); n != 3 || m.mu.writes.Points[0].V != 50 {
		t.Errorf("write rate %+v", m.mu.writes.Points)
	}
	since := tot.Since(Totals{Requests: map[RequestKey]float64{post: 50}, CPUSeconds: 1})
	if since.Requests[post] != 30 || since.CPUSeconds != 1 {
		t.Errorf("since %+v", since)
	}
}

func sampleResult() *Result {
	pass := true
	r := &Result{SchemaVersion: SchemaVersion, Scenario: "density", Command: "myriad bench density --nodes 2",
		Machine: Machine{Hostname: "h", OS: "linux", Arch: "amd64", CPUs: 2, MemoryBytes: 24 << 30, GoVersion: "go1.26"},
		Start:   time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC), Duration: Duration(12 * time.Second),
		Server: Server{Host: "https://127.0.0.1:6443", StartedByBench: true, PID: 42}, Params: map[string]string{"nodes": "2"},
		Latencies: []LatencyStat{{Key: Key{"POST", "pods", "resource"}, Count: 10, P50: Duration(time.Millisecond),
			P90: Duration(2 * time.Millisecond), P99: Duration(3 * time.Millisecond), Max: Duration(4 * time.Millisecond),
			SLO: Duration(time.Second), Pass: &pass}},
		Series:         []Series{{Name: "server cpu", Unit: "cores", Points: []Point{{1, 0.5}, {2, 0.7}}}},
		ServerRequests: []RequestCount{{Verb: "PUT", Resource: "nodes", Subresource: "status", Scope: "resource", Code: "200", Count: 7}},
	}
	r.AddFigure("pods_per_second", "pods running per second", 118.5, "pods/s")
	r.AddFigure("startup_p99", "pod startup p99", 1.5, "s")
	r.AddVerdict("all pods running", "60", "60", true)
	return r
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	r := sampleResult()
	plots := []PlotSpec{
		{File: "cpu.svg", Title: "CPU", YLabel: "cores", Series: []string{"server cpu"}},
		{File: "none.svg", Title: "nothing", YLabel: "x", Series: []string{"absent"}},
	}
	if err := WriteReport(dir, r, plots); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "cpu.svg")); err != nil || st.Size() < 500 {
		t.Errorf("cpu.svg: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.svg")); err == nil {
		t.Error("a plot without data was written")
	}
	back, err := ReadResult(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Plots) != 1 || back.Latencies[0].P99.D() != 3*time.Millisecond || back.Figures[0].Value != 118.5 || back.Duration.D() != 12*time.Second {
		t.Errorf("round trip: %+v", back)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# myriad bench density: PASS", "`myriad bench density --nodes 2`", "2026-11-22T08:00:00Z", "2 CPUs, 24.00 GiB",
		"| pods running per second | 118 pods/s |", "| pod startup p99 | 1.50 s |",
		"| – | POST | pods | resource | 10 | 0 | 1.0 ms | 2.0 ms | 3.0 ms | 4.0 ms | ≤ 1s | PASS |",
		"![CPU](cpu.svg)", "PID 42", "| PUT | nodes/status | resource | 200 | 7 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

func TestReadResultRejectsOtherSchema(t *testing.T) {
	p := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(p, []byte(`{"schemaVersion": 99}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadResult(p); err == nil || !strings.Contains(err.Error(), "99") {
		t.Errorf("err %v", err)
	}
}

func TestCompare(t *testing.T) {
	a, b := sampleResult(), sampleResult()
	b.Figures[0].Value = 237
	b.Latencies[0].P99 = Duration(6 * time.Millisecond)
	b.AddFigure("only_b", "only in B", 5, "")
	var out bytes.Buffer
	if err := Compare(&out, a, b, "a.json", "b.json"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| pods running per second | 118 pods/s | 237 pods/s | +118 pods/s | +100.0% |",
		"| POST pods resource p99 | 3.0 ms | 6.0 ms | +3.0 ms | +100.0% |",
		"| pod startup p99 | 1.50 s | 1.50 s | 0.0 ms | 0.0% |",
		"| only in B | – | 5 | – | – |",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("compare lacks %q:\n%s", want, out.String())
		}
	}
}

func TestFormatValue(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		unit string
		want string
	}{
		{0.0123, "s", "12.3 ms"}, {2.5, "s", "2.50 s"}, {3 << 30, "bytes", "3.00 GiB"}, {1500, "pods", "1500 pods"},
		{0.25, "cores", "0.25 cores"}, {12.345, "", "12.35"},
	} {
		if got := FormatValue(tc.v, tc.unit); got != tc.want {
			t.Errorf("FormatValue(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var buf safeBuffer
	p := NewProgress(&buf, "churn")
	p.Phase("create", 100, time.Time{}, func() string { return "running 7" })
	p.Add(40)
	line := p.Line()
	for _, want := range []string{"churn create", "40/100", "/s", "| running 7"} {
		if !strings.Contains(line, want) {
			t.Errorf("line %q lacks %q", line, want)
		}
	}
	p.Stop()
	if out := buf.String(); !strings.HasSuffix(out, "\n") || !strings.Contains(out, "40/100") {
		t.Errorf("final output %q", out)
	}
}

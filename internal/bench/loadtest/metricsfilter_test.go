package loadtest

import (
	"fmt"
	"strings"
	"testing"
)

// noiseText is families the harness does not read, in the shapes an API
// server exports: histograms, label values with braces, spaces and
// escaped quotes, comments, timestamps, special values.
func noiseText(series int) string {
	var b strings.Builder
	b.WriteString("# HELP apiserver_request_duration_seconds Response latency.\n# TYPE apiserver_request_duration_seconds histogram\n")
	for i := range series {
		for _, le := range []string{"0.005", "0.1", "1", "+Inf"} {
			fmt.Fprintf(&b, "apiserver_request_duration_seconds_bucket{resource=\"r%d\",verb=\"GET\",le=%q} %d\n", i, le, i)
		}
		fmt.Fprintf(&b, "apiserver_request_duration_seconds_sum{resource=\"r%d\",verb=\"GET\"} 1.5e-3\n", i)
		fmt.Fprintf(&b, "apiserver_request_duration_seconds_count{resource=\"r%d\",verb=\"GET\"} %d\n", i, i)
	}
	b.WriteString("# a free comment\n\n")
	b.WriteString("# TYPE odd_labels gauge\nodd_labels{msg=\"a } b {\",q=\"say \\\"hi\\\"\"} NaN 1700000000000\n")
	b.WriteString("untyped_thing -Inf\n")
	return b.String()
}

// TestParseMetricsIgnoresOtherFamilies checks the pre-filter changes
// nothing ParseMetrics returns, wherever the families it reads sit among
// others, and that what is not metrics still fails.
func TestParseMetricsIgnoresOtherFamilies(t *testing.T) {
	want, err := ParseMetrics(strings.NewReader(metricsText))
	if err != nil {
		t.Fatal(err)
	}
	half := strings.Index(metricsText, "# TYPE process_cpu_seconds_total")
	for name, text := range map[string]string{
		"noise first":  noiseText(20) + metricsText,
		"noise last":   metricsText + noiseText(20),
		"noise inside": metricsText[:half] + noiseText(3) + metricsText[half:],
	} {
		got, err := ParseMetrics(strings.NewReader(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	for _, bad := range []string{
		"not metrics {",
		`{"kind":"Status","apiVersion":"v1","status":"Failure","code":401}`,
		"<html><body>502 Bad Gateway</body></html>",
		metricsText + "apiserver_request_total{code=\"200\"} not-a-number\n",
	} {
		if _, err := ParseMetrics(strings.NewReader(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestKeepLine(t *testing.T) {
	keep := map[string]bool{"kept": true}
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"kept 1\n", true},
		{"kept{a=\"b\"} 1\n", true},
		{"# TYPE kept counter\n", true},
		{"# HELP kept Help text.\n", true},
		{"# TYPE other counter\n", false},
		{"# just a comment\n", false},
		{"other 1\n", false},
		{"other{a=\"}\"} 1 1700000000000\n", false},
		{"other{a=\"b\"} +Inf\n", false},
		{"\n", false},
		{"other two words\n", true}, // not a sample: left for the parser to reject
		{"other{a=\"b\" 1\n", true},
		{"{\"kind\":\"Status\"}\n", true},
	} {
		if got := keepLine([]byte(tc.line), keep); got != tc.want {
			t.Errorf("keepLine(%q) = %v, want %v", tc.line, got, tc.want)
		}
	}
}

// BenchmarkParseMetrics parses a /metrics of about an API server's size
// (≈ 700 KB, mostly histograms the harness does not read).
func BenchmarkParseMetrics(b *testing.B) {
	text := metricsText + noiseText(1400)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMetrics(strings.NewReader(text)); err != nil {
			b.Fatal(err)
		}
	}
}

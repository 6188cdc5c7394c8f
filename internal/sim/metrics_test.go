package sim

import (
	"io"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// families gathers reg by metric name.
func families(t *testing.T, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// value is the value of the sample of name whose labels include labels
// (name=value pairs); ok false if there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	mf, ok := fams[name]
	if !ok {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// lateness returns the lateness histogram's count, sum and cumulative
// bucket counts by upper bound.
func lateness(t *testing.T, fams map[string]*dto.MetricFamily) (count uint64, sum float64, buckets map[float64]uint64) {
	t.Helper()
	mf, ok := fams["myriad_sim_lease_renewal_lateness_seconds"]
	if !ok || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].Histogram == nil {
		t.Fatalf("no lateness histogram in %v", mf)
	}
	h := mf.GetMetric()[0].GetHistogram()
	buckets = map[float64]uint64{}
	for _, b := range h.GetBucket() {
		buckets[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	return h.GetSampleCount(), h.GetSampleSum(), buckets
}

// The metrics myriad sim serves: the renewal lateness histogram follows
// the renewals (a retried one is late by its backoff), the counters and
// gauges agree with Stats, and the process's CPU and memory are there.
func TestMetricsReportLatenessAndProcessUsage(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := newTestSim(t, 1, func(c *Config) { c.Metrics = reg })
	fails := 1 // the first renewal (due at +10 s) gets a 429 and is retried 200 ms later
	ts.client.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewTooManyRequests("busy", 1)
		}
		return false, nil, nil
	})
	ts.run(t)
	ts.settle(t)

	type want struct {
		count   uint64
		sum     float64
		buckets map[float64]uint64 // a few cumulative buckets
		ok, err float64            // myriad_sim_lease_renewals_total by result
		maxGap  float64
	}
	steps := []struct {
		name    string
		advance time.Duration
		want    want
	}{
		{"registered, no renewal yet", 0, want{0, 0, map[float64]uint64{40: 0}, 0, 0, 0}},
		{"one renewal, 200 ms late", 11 * time.Second, want{1, 0.2, map[float64]uint64{0.1: 0, 0.25: 1}, 1, 1, 10.2}},
		{"and one on time", 10 * time.Second, want{2, 0.2, map[float64]uint64{0.001: 1, 0.1: 1, 0.25: 2}, 2, 1, 10.2}},
	}
	var prevCPU float64
	for _, st := range steps {
		ts.advance(t, st.advance, 100*time.Millisecond)
		fams := families(t, reg)
		count, sum, buckets := lateness(t, fams)
		w := st.want
		if count != w.count || !near(sum, w.sum) {
			t.Errorf("%s: lateness count %d sum %.3f s, want %d %.3f s", st.name, count, sum, w.count, w.sum)
		}
		for le, n := range w.buckets {
			if buckets[le] != n {
				t.Errorf("%s: lateness bucket le=%g holds %d, want %d", st.name, le, buckets[le], n)
			}
		}
		stats := ts.Stats()
		if stats.Renewals != count || stats.Lateness.Count() != count {
			t.Errorf("%s: Stats has %d renewals and %d lateness samples, the histogram %d", st.name, stats.Renewals, stats.Lateness.Count(), count)
		}
		gauges := []struct {
			name   string
			labels []string
			want   float64
		}{
			{"myriad_sim_lease_renewals_total", []string{"result", "ok"}, w.ok},
			{"myriad_sim_lease_renewals_total", []string{"result", "error"}, w.err},
			{"myriad_sim_lease_renewal_max_gap_seconds", nil, w.maxGap},
			{"myriad_sim_nodes", nil, 1},
			{"myriad_sim_nodes_registered", nil, 1},
			{"myriad_sim_nodes_failed", nil, 0},
		}
		for _, g := range gauges {
			v, ok := value(fams, g.name, g.labels...)
			if w := g.want; (!ok && w != 0) || !near(v, w) {
				t.Errorf("%s: %s%v = %g (present %v), want %g", st.name, g.name, g.labels, v, ok, w)
			}
		}
		if goruntime.GOOS != "linux" {
			continue // the process collector reads /proc
		}
		cpu, okCPU := value(fams, "process_cpu_seconds_total")
		rss, okRSS := value(fams, "process_resident_memory_bytes")
		if !okCPU || !okRSS || cpu <= 0 || rss <= 0 || cpu < prevCPU {
			t.Errorf("%s: process cpu %g s (present %v, before %g), rss %g bytes (present %v); want both present, positive, cpu not going back",
				st.name, cpu, okCPU, prevCPU, rss, okRSS)
		}
		prevCPU = cpu
	}

	// What a scrape of the command's /metrics shows.
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`myriad_sim_lease_renewal_lateness_seconds_bucket{le="0.25"} 2`,
		`myriad_sim_lease_renewal_lateness_seconds_count 2`,
		`myriad_sim_lease_renewals_total{result="ok"} 2`,
	} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("scrape lacks %q", line)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

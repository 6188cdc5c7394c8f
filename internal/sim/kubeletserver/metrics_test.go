package kubeletserver

import (
	"io"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ts := newTestServer(t, func(c *Config) { c.Metrics = reg })
	client := ts.httpClient(t, &ts.pki.apiserverCert)
	for _, p := range []string{"/containerLogs/default/web/app", "/containerLogs/default/web/app?tailLines=1", "/healthz", "/no/such/path"} {
		resp, err := client.Get(ts.url + p)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	m := ts.metrics
	for _, tt := range []struct {
		path string
		want float64
	}{{"containerLogs", 2}, {"healthz", 1}, {"other", 1}} {
		if got := testutil.ToFloat64(m.requests.WithLabelValues("GET", tt.path, "readwrite", "false")); got != tt.want {
			t.Errorf("kubelet_http_requests_total{path=%q} = %v, want %v", tt.path, got, tt.want)
		}
	}
	if got := testutil.ToFloat64(m.inflight.WithLabelValues("GET", "containerLogs", "readwrite", "false")); got != 0 {
		t.Errorf("inflight = %v after every request ended", got)
	}
	if n, err := testutil.GatherAndCount(reg, "kubelet_http_requests_duration_seconds"); err != nil || n != 3 {
		t.Errorf("duration series: %d, %v; want 3", n, err)
	}
}

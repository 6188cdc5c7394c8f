package filters

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	metrics, err := WithMetrics(MetricsConfig{
		Registerer: reg,
		KnownResource: func(info *request.RequestInfo) bool {
			return info.Resource == "pods" || info.Resource == "deployments"
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/boom"):
			panic("boom")
		case r.Header.Get("Code") == "429":
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}), WithPanicRecovery(nil), WithRequestInfo, metrics)

	patch := httptest.NewRequest("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", nil)
	patch.Header.Set("Content-Type", "application/apply-patch+yaml")
	throttled := httptest.NewRequest("GET", "/api/v1/pods", nil)
	throttled.Header.Set("Code", "429")
	for _, r := range []*http.Request{
		httptest.NewRequest("GET", "/api/v1/pods", nil),
		httptest.NewRequest("GET", "/api/v1/pods", nil),
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods?watch=true", nil),
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/x", nil),
		httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods?dryRun=All", nil),
		patch,
		throttled,
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/boom", nil),
		httptest.NewRequest("GET", "/api/v1/made-up-1", nil),
		httptest.NewRequest("GET", "/healthz", nil),
		httptest.NewRequest("BREW", "/api/v1/pods", nil),
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/x/log", nil),
		httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods/x/exec", nil),
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/x/status", nil),
	} {
		serve(h, r)
	}

	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"cluster list", map[string]string{"verb": "LIST", "resource": "pods", "scope": "cluster", "code": "200", "component": "apiserver", "group": "", "version": "v1"}, 2},
		{"namespaced watch", map[string]string{"verb": "WATCH", "scope": "namespace", "code": "200"}, 1},
		{"get", map[string]string{"verb": "GET", "scope": "resource", "resource": "pods", "code": "200"}, 1},
		{"dry-run create", map[string]string{"verb": "POST", "scope": "resource", "dry_run": "All"}, 1},
		{"apply", map[string]string{"verb": "APPLY", "group": "apps", "resource": "deployments"}, 1},
		{"throttled", map[string]string{"verb": "LIST", "code": "429"}, 1},
		{"panic", map[string]string{"verb": "GET", "code": "500", "resource": "pods"}, 1},
		{"unknown resource loses its label", map[string]string{"verb": "LIST", "resource": "", "scope": "cluster", "code": "200"}, 1},
		{"non-resource", map[string]string{"verb": "GET", "scope": "", "resource": "", "code": "200"}, 1},
		{"unknown method", map[string]string{"verb": "other"}, 1},
		// Streams are CONNECT, as upstream, so GET/POST latency SLOs
		// do not count them.
		{"log is CONNECT", map[string]string{"verb": "CONNECT", "resource": "pods", "subresource": "log"}, 1},
		{"exec is CONNECT", map[string]string{"verb": "CONNECT", "resource": "pods", "subresource": "exec"}, 1},
		{"status is a GET", map[string]string{"verb": "GET", "resource": "pods", "subresource": "status"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metricValue(t, reg, "apiserver_request_total", tt.labels); got != tt.want {
				t.Fatalf("apiserver_request_total%v = %v, want %v", tt.labels, got, tt.want)
			}
		})
	}
	if got := metricValue(t, reg, "apiserver_request_duration_seconds", map[string]string{"verb": "LIST", "resource": "pods", "scope": "cluster"}); got != 3 {
		t.Errorf("duration samples for LIST pods = %v, want 3", got)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "apiserver_request_total" {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetValue() == "made-up-1" {
						t.Errorf("unknown resource leaked into labels")
					}
				}
			}
		}
	}
}

func TestMetricsLongRunningGauge(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	metrics, err := WithMetrics(MetricsConfig{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"verb": "WATCH", "resource": "pods", "scope": "namespace"}
	var during float64
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		during = metricValue(t, reg, "apiserver_longrunning_requests", labels)
	}), WithRequestInfo, metrics)
	serve(h, httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods?watch=true", nil))
	if during != 1 {
		t.Fatalf("gauge during watch = %v, want 1", during)
	}
	if after := metricValue(t, reg, "apiserver_longrunning_requests", labels); after != 0 {
		t.Fatalf("gauge after watch = %v, want 0", after)
	}
}

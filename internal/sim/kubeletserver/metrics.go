package kubeletserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the kubelet's own HTTP server metrics, by their upstream
// names and labels (pkg/kubelet/server/metrics), so a kubelet dashboard
// reads the hollow nodes too. A nil *metrics records nothing.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"method", "path", "server_type", "long_running"}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubelet_http_requests_total",
			Help: "Number of the http requests received since the server started (all hollow nodes of the process).",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kubelet_http_requests_duration_seconds",
			Help:    "Duration in seconds to serve http requests.",
			Buckets: prometheus.DefBuckets,
		}, labels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubelet_http_inflight_requests",
			Help: "Number of the inflight http requests.",
		}, labels),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inflight} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("kubeletserver: registering metrics: %w", err)
			}
		}
	}
	return m, nil
}

// rootPaths are the path label's values; anything else counts as "other",
// so a client cannot grow the label set.
var rootPaths = map[string]bool{
	"healthz": true, "containerLogs": true, "exec": true, "attach": true,
	"portForward": true, "run": true,
}

// longRunning are the roots the kubelet counts as long-running. Upstream's
// map says "portforward", which never matches its "portForward" path; the
// intent is clear, so it is followed here.
var longRunning = map[string]bool{"exec": true, "attach": true, "portForward": true}

func (m *metrics) instrument(next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		root, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if !rootPaths[root] {
			root = "other"
		}
		method := r.Method
		if method != http.MethodGet && method != http.MethodPost {
			method = "other"
		}
		lr := "false"
		if longRunning[root] {
			lr = "true"
		}
		m.requests.WithLabelValues(method, root, "readwrite", lr).Inc()
		g := m.inflight.WithLabelValues(method, root, "readwrite", lr)
		g.Inc()
		defer g.Dec()
		start := time.Now()
		defer func() { m.duration.WithLabelValues(method, root, "readwrite", lr).Observe(time.Since(start).Seconds()) }()
		next.ServeHTTP(w, r)
	})
}

package kubeletproxy

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics: how long the kubelet (or pod) took to answer a proxied
// request, by subresource and outcome. For streams this is the time to
// the kubelet's response headers, not the stream's length: a stream's
// duration is the client's business, and the API latency metrics count
// these requests under the CONNECT verb, outside the SLOs. A WebSocket
// exec or attach, which the server upgrades itself before dialling the
// kubelet, is observed at that upgrade.
type metrics struct {
	latency *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "myriad_kubelet_proxy_request_duration_seconds",
		Help:    "Time from a connect request (pods/log, exec, attach, portforward, proxy) to the backend's response headers, by subresource and status code (0: no response).",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	}, []string{"resource", "subresource", "code"})}
	if reg != nil {
		if err := reg.Register(m.latency); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) observe(resource, subresource string, code int, start time.Time) {
	m.latency.WithLabelValues(resource, subresource, strconv.Itoa(code)).Observe(time.Since(start).Seconds())
}

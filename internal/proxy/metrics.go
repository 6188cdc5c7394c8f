package proxy

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the proxy's Prometheus series, named as upstream's kube-proxy
// names them (pkg/proxy/metrics) so existing dashboards work.
type Metrics struct {
	SyncDuration           *prometheus.HistogramVec
	NetworkProgramming     prometheus.Histogram
	LastSync               prometheus.Gauge
	LastQueued             prometheus.Gauge
	SyncFailures           prometheus.Counter
	EndpointChanges        prometheus.Counter
	ServiceChanges         prometheus.Counter
	ObjectsChanged         *prometheus.CounterVec
	SkippedPorts           *prometheus.GaugeVec
	ProgrammedServicePorts prometheus.Gauge
	// HealthzTotal and LivezTotal count /healthz and /livez answers by
	// status code.
	HealthzTotal, LivezTotal *prometheus.CounterVec
}

// NewMetrics creates the series and registers them with reg (nil: not
// registered, as the simulator's many proxies want).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		SyncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubeproxy_sync_proxy_rules_duration_seconds", Help: "SyncProxyRules latency in seconds, by kind (partial or full).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
		}, []string{"kind"}),
		NetworkProgramming: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubeproxy_network_programming_duration_seconds", Help: "In Cluster Network Programming Latency in seconds",
			Buckets: append(prometheus.LinearBuckets(0.25, 0.25, 2), append(prometheus.LinearBuckets(1, 1, 59), prometheus.LinearBuckets(60, 5, 12)...)...),
		}),
		LastSync:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds", Help: "The last time proxy rules were successfully synced"}),
		LastQueued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", Help: "The last time a sync of proxy rules was queued"}),
		SyncFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubeproxy_sync_proxy_rules_nftables_sync_failures_total", Help: "Cumulative proxy nftables sync failures"}),
		EndpointChanges: prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_total", Help: "Cumulative proxy rules EndpointSlice changes"}),
		ServiceChanges:  prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeproxy_sync_proxy_rules_service_changes_total", Help: "Cumulative proxy rules Service changes"}),
		// Not upstream: what each transaction touched, the figure that shows
		// the cost is proportional to the change, not to the table.
		ObjectsChanged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_proxy_nftables_objects_changed_total", Help: "nftables objects written (map elements, chains, maps), by kind",
		}, []string{"kind"}),
		SkippedPorts: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "myriad_proxy_skipped_service_ports", Help: "Service ports the proxy cannot program, by reason",
		}, []string{"reason"}),
		ProgrammedServicePorts: prometheus.NewGauge(prometheus.GaugeOpts{Name: "myriad_proxy_service_ports", Help: "Service ports (per family) currently programmed"}),
		HealthzTotal:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_healthz_total", Help: "Cumulative proxy healthz HTTP status"}, []string{"code"}),
		LivezTotal:             prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubeproxy_proxy_livez_total", Help: "Cumulative proxy livez HTTP status"}, []string{"code"}),
	}
	if reg != nil {
		reg.MustRegister(m.SyncDuration, m.NetworkProgramming, m.LastSync, m.LastQueued, m.SyncFailures,
			m.EndpointChanges, m.ServiceChanges, m.ObjectsChanged, m.SkippedPorts, m.ProgrammedServicePorts, m.HealthzTotal, m.LivezTotal)
	}
	return m
}

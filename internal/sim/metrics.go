package sim

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the simulator's Prometheus metrics. A nil *metrics records
// nothing, so callers need not check whether metrics are on.
type metrics struct {
	lateness      prometheus.Histogram
	renewals      *prometheus.CounterVec
	statusUpdates *prometheus.CounterVec
	pods          *prometheus.CounterVec
	greedy        *prometheus.CounterVec
}

func newMetrics(s *Sim, reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "myriad_sim_lease_renewal_lateness_seconds",
			Help:    "Heartbeat (Lease renewal, or full Node status with --full-status-heartbeat) acknowledgement time minus its scheduled time.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40},
		}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_sim_lease_renewals_total",
			Help: "Heartbeats written, by result (ok, error).",
		}, []string{"result"}),
		statusUpdates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_sim_node_status_updates_total",
			Help: "Node status writes, by kind (heartbeat, periodic) and result (ok, error).",
		}, []string{"kind", "result"}),
		pods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_sim_pod_transitions_total",
			Help: "Pod lifecycle writes, by what they did (Running, Succeeded, Rejected, Deleted).",
		}, []string{"to"}),
		greedy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_sim_greedy_lists_total",
			Help: "Cluster-wide Service lists by greedy agents, by result (ok, error).",
		}, []string{"result"}),
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	c := &s.counters
	cs := []prometheus.Collector{
		m.lateness, m.renewals, m.statusUpdates, m.pods, m.greedy,
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "myriad_sim_node_requests_denied_total",
			Help: "Hollow nodes' requests the API server answered 401 or 403 (each node acting as system:node:<name>)."},
			func() float64 { return float64(s.Stats().NodeRequestsDenied) }),
		gauge("myriad_sim_nodes", "Hollow nodes configured.", func() float64 { return float64(len(s.nodes)) }),
		gauge("myriad_sim_nodes_registered", "Hollow nodes registered.", func() float64 { return float64(c.registered.Load()) }),
		gauge("myriad_sim_nodes_failed", "Hollow nodes failed on purpose (Fail without Recover).", func() float64 { return float64(c.failed.Load()) }),
		gauge("myriad_sim_pods_running", "Pods the hollow nodes run.", func() float64 { return float64(c.podsRunning.Load()) }),
		gauge("myriad_sim_pods_starting", "Pods admitted and waiting for their startup delay.", func() float64 { return float64(c.podsStarting.Load()) }),
		gauge("myriad_sim_lease_renewal_max_gap_seconds", "Longest time a running hollow node went between acknowledged heartbeats.", func() float64 {
			return s.Stats().MaxRenewGap.Seconds()
		}),
		gauge("myriad_sim_heartbeat_workers_busy", "Heartbeat workers busy now.", func() float64 { return float64(s.heartbeats.busy.Load()) }),
	}
	for _, col := range cs {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("sim: registering metrics: %w", err)
		}
	}
	// CPU and RSS of the process; the embedding program may have one already.
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); !errors.As(err, &are) {
			return nil, fmt.Errorf("sim: registering process metrics: %w", err)
		}
	}
	return m, nil
}

func result(ok bool) string {
	if ok {
		return "ok"
	}
	return "error"
}

func (m *metrics) renewal(ok bool) {
	if m != nil {
		m.renewals.WithLabelValues(result(ok)).Inc()
	}
}

func (m *metrics) statusUpdate(heartbeat, ok bool) {
	if m == nil {
		return
	}
	kind := "periodic"
	if heartbeat {
		kind = "heartbeat"
		m.renewals.WithLabelValues(result(ok)).Inc()
	}
	m.statusUpdates.WithLabelValues(kind, result(ok)).Inc()
}

func (m *metrics) podTransition(to string) {
	if m != nil {
		m.pods.WithLabelValues(to).Inc()
	}
}

func (m *metrics) greedyList(ok bool) {
	if m != nil {
		m.greedy.WithLabelValues(result(ok)).Inc()
	}
}

func (m *metrics) observeLateness(seconds float64) {
	if m != nil {
		m.lateness.Observe(seconds)
	}
}

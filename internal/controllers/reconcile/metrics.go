package reconcile

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// syncMetrics registers myriad_controller_syncs_total{controller,result}
// and myriad_controller_sync_duration_seconds{controller} for name on reg,
// which may be nil (the metrics are then kept but not exported).
func syncMetrics(reg prometheus.Registerer, name string) (*prometheus.CounterVec, prometheus.Observer) {
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "myriad_controller_syncs_total",
		Help:        "Syncs of controller keys, by result (success, error, requeue).",
		ConstLabels: prometheus.Labels{"controller": name},
	}, []string{"result"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "myriad_controller_sync_duration_seconds",
		Help:        "Time to sync one controller key.",
		ConstLabels: prometheus.Labels{"controller": name},
		Buckets:     prometheus.ExponentialBuckets(0.0005, 4, 10),
	})
	if reg != nil {
		syncs, duration = register(reg, syncs), register(reg, duration)
	}
	// Every result is exported from the start, at zero, so rates and
	// alerts need no absent() guards.
	for _, result := range []string{"success", "error", "requeue"} {
		syncs.WithLabelValues(result)
	}
	return syncs, duration
}

// queueMetrics returns a workqueue.MetricsProvider exporting client-go's
// queue metrics under upstream's names (workqueue_depth,
// workqueue_adds_total, ...; label "name") on reg rather than a global
// registry, so controller-manager dashboards work; nil for a nil reg (the
// queue then emits nothing). Several calls on one registry share the
// vectors, so every Loop asks for its own.
func queueMetrics(reg prometheus.Registerer) workqueue.MetricsProvider {
	if reg == nil {
		return nil
	}
	const subsystem = "workqueue"
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	gauge := func(name, help string) *prometheus.GaugeVec {
		return register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: name, Help: help}, []string{"name"}))
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: name, Help: help}, []string{"name"}))
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: name, Help: help, Buckets: buckets}, []string{"name"}))
	}
	return &queueProvider{
		depth:      gauge("depth", "Current depth of workqueue"),
		adds:       counter("adds_total", "Total number of adds handled by workqueue"),
		latency:    histogram("queue_duration_seconds", "How long in seconds an item stays in workqueue before being requested."),
		work:       histogram("work_duration_seconds", "How long in seconds processing an item from workqueue takes."),
		unfinished: gauge("unfinished_work_seconds", "How many seconds of work has done that is in progress and hasn't been observed by work_duration."),
		longest:    gauge("longest_running_processor_seconds", "How many seconds has the longest running processor for workqueue been running."),
		retries:    counter("retries_total", "Total number of retries handled by workqueue"),
	}
}

// register registers c, or returns the identical collector registered
// before it.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// queueProvider implements workqueue.MetricsProvider over labelled vectors.
type queueProvider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

func (p *queueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}
func (p *queueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}
func (p *queueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}
func (p *queueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.work.WithLabelValues(name)
}
func (p *queueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}
func (p *queueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}
func (p *queueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}

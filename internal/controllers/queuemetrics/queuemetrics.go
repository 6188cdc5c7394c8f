package queuemetrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

const subsystem = "workqueue"

// provider implements workqueue.MetricsProvider over labelled vectors.
type provider struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, work              *prometheus.HistogramVec
}

// Provider returns a MetricsProvider registering on reg; nil for a nil reg
// (the queue then emits nothing). Several calls on one registry share the
// vectors, so every controller can ask for its own.
func Provider(reg prometheus.Registerer) workqueue.MetricsProvider {
	if reg == nil {
		return nil
	}
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 12)
	p := &provider{
		depth: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "depth",
			Help: "Current depth of workqueue"}, []string{"name"})),
		adds: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "adds_total",
			Help: "Total number of adds handled by workqueue"}, []string{"name"})),
		latency: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: "queue_duration_seconds",
			Help: "How long in seconds an item stays in workqueue before being requested.", Buckets: buckets}, []string{"name"})),
		work: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: subsystem, Name: "work_duration_seconds",
			Help: "How long in seconds processing an item from workqueue takes.", Buckets: buckets}, []string{"name"})),
		unfinished: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "unfinished_work_seconds",
			Help: "How many seconds of work has done that is in progress and hasn't been observed by work_duration."}, []string{"name"})),
		longest: register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: subsystem, Name: "longest_running_processor_seconds",
			Help: "How many seconds has the longest running processor for workqueue been running."}, []string{"name"})),
		retries: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: subsystem, Name: "retries_total",
			Help: "Total number of retries handled by workqueue"}, []string{"name"})),
	}
	return p
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

func (p *provider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}
func (p *provider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}
func (p *provider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}
func (p *provider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.work.WithLabelValues(name)
}
func (p *provider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}
func (p *provider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longest.WithLabelValues(name)
}
func (p *provider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}

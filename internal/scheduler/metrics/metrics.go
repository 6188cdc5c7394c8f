package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a scheduling attempt, upstream's label values.
const (
	Scheduled     = "scheduled"
	Unschedulable = "unschedulable"
	Error         = "error"
)

// Metrics are the scheduler's metrics. A nil *Metrics records nothing.
type Metrics struct {
	Attempts          *prometheus.CounterVec
	AttemptDuration   *prometheus.HistogramVec
	E2EDuration       *prometheus.HistogramVec
	Pending           *prometheus.GaugeVec
	PreemptionVictims prometheus.Histogram
}

// New creates the metrics and registers them on reg (if non-nil).
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "scheduler", Name: "schedule_attempts_total",
			Help: "Number of attempts to schedule pods, by the result."}, []string{"result", "profile"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
			Help: "Scheduling attempt latency in seconds (scheduling algorithm + binding)", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"result", "profile"}),
		E2EDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "e2e_scheduling_duration_seconds",
			Help: "E2e scheduling latency in seconds (from the pod entering the queue to its binding)", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"result", "profile"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "scheduler", Name: "pending_pods",
			Help: "Number of pending pods, by the queue type."}, []string{"queue"}),
		PreemptionVictims: prometheus.NewHistogram(prometheus.HistogramOpts{Subsystem: "scheduler", Name: "preemption_victims",
			Help: "Number of selected preemption victims", Buckets: prometheus.ExponentialBuckets(1, 2, 7)}),
	}
	if reg != nil {
		// A scheduler that runs again in the same process (myriad up, after
		// losing its Lease) keeps counting in the collectors it registered.
		var err error
		register(reg, &m.Attempts, &err)
		register(reg, &m.AttemptDuration, &err)
		register(reg, &m.E2EDuration, &err)
		register(reg, &m.Pending, &err)
		register(reg, &m.PreemptionVictims, &err)
		if err != nil {
			return nil, fmt.Errorf("register scheduler metrics: %w", err)
		}
	}
	return m, nil
}

// register registers *c, or points *c at the identical collector
// registered before; other failures are joined into *errp.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C, errp *error) {
	err := reg.Register(*c)
	if err == nil {
		return
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return
		}
	}
	*errp = errors.Join(*errp, err)
}

// SetPending records the queue lengths.
func (m *Metrics) SetPending(active, backoff, unschedulable int) {
	if m == nil {
		return
	}
	m.Pending.WithLabelValues("active").Set(float64(active))
	m.Pending.WithLabelValues("backoff").Set(float64(backoff))
	m.Pending.WithLabelValues("unschedulable").Set(float64(unschedulable))
	m.Pending.WithLabelValues("gated").Set(0)
}

// Attempt records one attempt's result and duration, and for scheduled pods
// the end-to-end latency.
func (m *Metrics) Attempt(result, profile string, seconds, e2eSeconds float64) {
	if m == nil {
		return
	}
	m.Attempts.WithLabelValues(result, profile).Inc()
	m.AttemptDuration.WithLabelValues(result, profile).Observe(seconds)
	if e2eSeconds >= 0 {
		m.E2EDuration.WithLabelValues(result, profile).Observe(e2eSeconds)
	}
}

package etcd

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are upstream's etcd client metrics. Several stores (one per
// etcd shard) may register on one registerer: the second finds the first's
// collectors and shares them.
//
// The API server records etcd_request_duration_seconds around its own
// store calls too (internal/apiserver/metrics.go, same options): when both
// register on one registry they share the histogram.
type metrics struct {
	duration *prometheus.HistogramVec
	total    *prometheus.CounterVec
	errors   *prometheus.CounterVec
	dbSize   *prometheus.GaugeVec

	mu struct {
		sync.RWMutex
		series map[seriesKey]*series
	}
}

type seriesKey struct{ op, resource string }

// series caches one label set's children: WithLabelValues hashes and
// allocates on every call, too much for the request path.
type series struct {
	duration prometheus.Observer
	total    prometheus.Counter
	errors   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Store request latency in seconds for each operation and object type.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"operation", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: "Etcd request counts for each operation and object type.",
		}, []string{"operation", "type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_request_errors_total",
			Help: "Etcd failed request counts for each operation and object type.",
		}, []string{"operation", "type"}),
		dbSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "etcd_db_total_size_in_bytes",
			Help: "Total size of the etcd database file physically allocated in bytes.",
		}, []string{"endpoint"}),
	}
	m.mu.series = map[seriesKey]*series{}
	var err error
	if m.duration, err = registerOrReuse(reg, m.duration); err != nil {
		return nil, err
	}
	if m.total, err = registerOrReuse(reg, m.total); err != nil {
		return nil, err
	}
	if m.errors, err = registerOrReuse(reg, m.errors); err != nil {
		return nil, err
	}
	if m.dbSize, err = registerOrReuse(reg, m.dbSize); err != nil {
		return nil, err
	}
	return m, nil
}

func registerOrReuse[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

// observe records one request on key's resource; call it deferred with
// the start time.
func (m *metrics) observe(op, key string, start time.Time) {
	if m == nil {
		return
	}
	s := m.series(op, key)
	s.duration.Observe(time.Since(start).Seconds())
	s.total.Inc()
}

func (m *metrics) fail(op, key string) {
	if m == nil {
		return
	}
	m.series(op, key).errors.Inc()
}

func (m *metrics) series(op, key string) *series {
	k := seriesKey{op, resourceOf(key)}
	m.mu.RLock()
	s := m.mu.series[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.mu.series[k]; s == nil {
		t := typeLabel(k.resource)
		s = &series{
			duration: m.duration.WithLabelValues(op, t),
			total:    m.total.WithLabelValues(op, t),
			errors:   m.errors.WithLabelValues(op, t),
		}
		// Copy the key: it may be a slice of a caller's larger string.
		m.mu.series[seriesKey{op, strings.Clone(k.resource)}] = s
	}
	return s
}

// resourceOf returns key's "/<group>/<resource>" without allocating, or
// "" for keys outside Myriad's layout.
func resourceOf(key string) string {
	rp, _ := resourcePrefixOf(key)
	return rp
}

// typeLabel is upstream's type label, the group-qualified resource:
// "pods", "deployments.apps".
func typeLabel(rp string) string {
	group, resource, ok := splitResourcePrefix(rp)
	switch {
	case !ok:
		return "unknown"
	case group == "core":
		return resource
	}
	return resource + "." + group
}

func (m *metrics) setDBSize(endpoint string, size int64) {
	if m == nil {
		return
	}
	m.dbSize.WithLabelValues(endpoint).Set(float64(size))
}

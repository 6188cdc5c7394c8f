package apiserver

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// serverMetrics are the handler-level metrics, under upstream's names so
// existing dashboards work. Request counts and latencies are recorded by
// the metrics filter; these cover what only the handlers see.
type serverMetrics struct {
	watchEvents     *prometheus.CounterVec
	watchEventBytes *prometheus.HistogramVec
	// storageDuration is upstream's etcd_request_duration_seconds: the
	// dashboards that watch etcd latency watch our store's the same way.
	storageDuration *prometheus.HistogramVec
	// storeTimesItself is set when the stores record
	// etcd_request_duration_seconds themselves (Config.StoreRecordsMetrics):
	// observing here too would count every request twice.
	storeTimesItself bool
}

func newServerMetrics(reg prometheus.Registerer, storeTimesItself bool) (*serverMetrics, error) {
	m := &serverMetrics{
		storeTimesItself: storeTimesItself,
		watchEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_watch_events_total",
			Help: "Number of events sent in watch clients",
		}, []string{"group", "version", "resource"}),
		watchEventBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_watch_events_sizes",
			Help:    "Watch event size distribution in bytes",
			Buckets: prometheus.ExponentialBuckets(1024, 2.0, 8),
		}, []string{"group", "version", "resource"}),
		storageDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "etcd_request_duration_seconds",
			Help:    "Store request latency in seconds for each operation and object type.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"operation", "type"}),
	}
	collectors := []prometheus.Collector{m.watchEvents, m.watchEventBytes}
	if !storeTimesItself {
		// The store registered it already otherwise.
		collectors = append(collectors, m.storageDuration)
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observeStorage records one store operation on a resource.
func (m *serverMetrics) observeStorage(op, resource string, start time.Time) {
	if m.storeTimesItself {
		return
	}
	m.storageDuration.WithLabelValues(op, resource).Observe(time.Since(start).Seconds())
}

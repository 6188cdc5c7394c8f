package cache

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics uses upstream's watch-cache metric names where one exists, so
// existing dashboards work; each cache labels them with its resource.
type metrics struct {
	reg                                                                                                  prometheus.Registerer
	all                                                                                                  []prometheus.Collector
	received, dispatched, terminated, initializations, fromImage, restarts, undecodable, futureRevisions prometheus.Counter
	capacity, objects, watchers                                                                          prometheus.Gauge
}

func newMetrics(cfg Config) (*metrics, error) {
	labels := prometheus.Labels{"resource": cfg.Resource.String()}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
	}
	m := &metrics{
		reg:             cfg.Metrics,
		received:        counter("apiserver_watch_cache_events_received_total", "Events received by the watch cache from the store."),
		dispatched:      counter("apiserver_watch_cache_events_dispatched_total", "Events delivered to watchers."),
		terminated:      counter("apiserver_terminated_watchers_total", "Watchers ended because they could not keep up (or met an undecodable object)."),
		initializations: counter("apiserver_watch_cache_initializations_total", "Times the watch cache was (re)initialized from a list."),
		fromImage:       counter("myriad_watch_cache_image_fills_total", "Times the watch cache was filled from its image (saved at the last clean stop) instead of a list."),
		restarts:        counter("myriad_watch_cache_store_watch_restarts_total", "Times the store watch ended and was re-established."),
		undecodable:     counter("myriad_watch_cache_undecodable_objects_total", "Stored values that did not decode; reads of those keys fail until they are rewritten."),
		futureRevisions: counter("myriad_watch_cache_future_resource_versions_total", "Reads and watches refused with 410 because their resourceVersion is beyond anything the store issued (another store's)."),
		capacity:        gauge("apiserver_watch_cache_capacity", "Event window capacity."),
		objects:         gauge("myriad_watch_cache_objects", "Objects held by the watch cache."),
		watchers:        gauge("myriad_watch_cache_watchers", "Watchers of the watch cache."),
	}
	m.all = []prometheus.Collector{m.fromImage, m.futureRevisions, m.restarts, m.undecodable, m.received, m.dispatched, m.terminated, m.initializations, m.capacity, m.objects, m.watchers}
	if m.reg != nil {
		for i, col := range m.all {
			if err := m.reg.Register(col); err != nil {
				for _, done := range m.all[:i] {
					m.reg.Unregister(done)
				}
				return nil, fmt.Errorf("cache: registering metrics for %q: %w", cfg.Resource.String(), err)
			}
		}
	}
	return m, nil
}

func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, col := range m.all {
		m.reg.Unregister(col)
	}
}

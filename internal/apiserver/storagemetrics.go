package apiserver

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// storageMetrics reports, at scrape time, what the caches hold and how
// far behind their stores they are:
//
//	apiserver_storage_objects{resource}                 upstream's object count ("pods", "deployments.apps")
//	apiserver_resource_objects{group,resource}          its successor (upstream 1.34)
//	apiserver_watch_cache_resource_version{group,resource}  the revision each cache is complete up to
//	myriad_watch_cache_lag_revisions{group,resource}    its store's current revision minus that
//
// Upstream counts objects with a periodic count request to etcd; the
// caches hold every object already, so counting them costs nothing.
// The lag asks each shard's current revision once per scrape, within
// storageMetricsTimeout: a shard that does not answer reports no lag
// rather than stalling the scrape.
type storageMetrics struct {
	s                            *Server
	objects, resourceObjects, rv *prometheus.Desc
	lag                          *prometheus.Desc
}

const storageMetricsTimeout = time.Second

func newStorageMetrics(s *Server) *storageMetrics {
	return &storageMetrics{
		s:               s,
		objects:         prometheus.NewDesc("apiserver_storage_objects", "Number of stored objects at the time of last check split by kind.", []string{"resource"}, nil),
		resourceObjects: prometheus.NewDesc("apiserver_resource_objects", "Number of stored objects split by group and resource.", []string{"group", "resource"}, nil),
		rv:              prometheus.NewDesc("apiserver_watch_cache_resource_version", "Current resource version of watch cache broken by resource type.", []string{"group", "resource"}, nil),
		lag:             prometheus.NewDesc("myriad_watch_cache_lag_revisions", "Revisions the watch cache is behind its store (the store's current revision minus the cache's).", []string{"group", "resource"}, nil),
	}
}

func (m *storageMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.objects
	ch <- m.resourceObjects
	ch <- m.rv
	ch <- m.lag
}

func (m *storageMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), storageMetricsTimeout)
	defer cancel()
	current := map[string]int64{} // shard name -> revision
	for _, sh := range m.s.shards.all {
		if rev, err := sh.store.CurrentRevision(ctx); err == nil {
			current[sh.name] = rev
		}
	}
	for _, h := range m.s.handlers {
		if h.objects.conv != nil {
			continue // another version's storage: counted under it
		}
		gr := h.res.GroupVersionResource().GroupResource()
		n := float64(h.cache.Len())
		rev := h.cache.Revision()
		ch <- prometheus.MustNewConstMetric(m.objects, prometheus.GaugeValue, n, gr.String())
		ch <- prometheus.MustNewConstMetric(m.resourceObjects, prometheus.GaugeValue, n, gr.Group, gr.Resource)
		ch <- prometheus.MustNewConstMetric(m.rv, prometheus.GaugeValue, float64(rev), gr.Group, gr.Resource)
		if cur, ok := current[m.s.shards.nameFor(gr)]; ok && h.cache.Ready() {
			lag := cur - rev
			if lag < 0 {
				lag = 0 // the store moved between the two reads
			}
			ch <- prometheus.MustNewConstMetric(m.lag, prometheus.GaugeValue, float64(lag), gr.Group, gr.Resource)
		}
	}
}

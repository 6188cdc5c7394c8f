package filters

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// MetricsConfig configures WithMetrics.
type MetricsConfig struct {
	// Registerer receives the metrics; nil skips registration (the filter
	// still works, which keeps tests that don't care simple).
	Registerer prometheus.Registerer
	// Component is the "component" label. Default "apiserver".
	Component string
	// KnownResource reports whether the group/version/resource of a
	// request names something the server serves. Requests for anything
	// else are recorded with empty group, version, resource and
	// subresource: the filter runs before routing and authentication, so
	// without this check anyone could mint unbounded label values (and
	// memory) by requesting made-up paths. Nil accepts everything.
	KnownResource func(info *request.RequestInfo) bool
}

// requestDurationBuckets are upstream's, so existing SLO dashboards and
// recording rules (which pick bucket boundaries such as le="1") keep working.
var requestDurationBuckets = []float64{
	0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60,
}

// WithMetrics records upstream's apiserver_request_total,
// apiserver_request_duration_seconds and apiserver_longrunning_requests
// with upstream's label names and values (verb in upper case: LIST, WATCH,
// APPLY, ...). Place it outside authentication, authorization and
// max-in-flight so their 401/403/429 answers are counted too. Needs
// WithRequestInfo earlier in the chain.
func WithMetrics(cfg MetricsConfig) (Filter, error) {
	if cfg.Component == "" {
		cfg.Component = "apiserver"
	}
	requests, err := register(cfg.Registerer, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
	}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}))
	if err != nil {
		return nil, err
	}
	duration, err := register(cfg.Registerer, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
		Buckets: requestDurationBuckets,
	}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}))
	if err != nil {
		return nil, err
	}
	longRunning, err := register(cfg.Registerer, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_longrunning_requests",
		Help: "Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}))
	if err != nil {
		return nil, err
	}

	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(w, r)
			if info == nil {
				return
			}
			start := time.Now()
			rec := record(w)

			group, version, resource, subresource := info.APIGroup, info.APIVersion, info.Resource, info.Subresource
			if cfg.KnownResource != nil && info.IsResourceRequest && !cfg.KnownResource(info) {
				group, version, resource, subresource = "", "", "", ""
			}
			verb := metricVerb(r, info)
			scope := metricScope(info)
			dryRun := metricDryRun(r)

			if info.IsLongRunning() {
				g := longRunning.WithLabelValues(verb, group, version, resource, subresource, scope, cfg.Component)
				g.Inc()
				defer g.Dec()
			}
			// Deferred so that a panicking handler is still counted, as the
			// 500 the recovery filter will answer, before the panic goes on.
			panicked := true
			defer func() {
				code := rec.status()
				if panicked && !rec.wroteHeader() {
					code = http.StatusInternalServerError
				}
				requests.WithLabelValues(verb, dryRun, group, version, resource, subresource, scope, cfg.Component, strconv.Itoa(code)).Inc()
				duration.WithLabelValues(verb, dryRun, group, version, resource, subresource, scope, cfg.Component).Observe(time.Since(start).Seconds())
			}()
			next.ServeHTTP(rec, r)
			panicked = false
		})
	}, nil
}

// metricVerb maps a request to upstream's verb label: the HTTP method in
// upper case, except LIST for collection reads, WATCH for watches (also via
// ?watch=true) and APPLY for server-side apply. Unknown methods collapse to
// "other" to bound cardinality.
func metricVerb(r *http.Request, info *request.RequestInfo) string {
	switch info.Verb {
	case request.VerbList:
		return "LIST"
	case request.VerbWatch:
		return "WATCH"
	}
	// Streams to kubelets and pods last as long as their clients want:
	// upstream reports them as CONNECT, which the latency SLOs exclude.
	if info.IsResourceRequest && connectSubresources[info.Subresource] {
		return "CONNECT"
	}
	switch r.Method {
	case http.MethodPatch:
		if info.IsResourceRequest && strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch") {
			return "APPLY"
		}
		return "PATCH"
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodOptions, http.MethodConnect:
		return r.Method
	}
	return "other"
}

// connectSubresources are upstream's validConnectRequests.
var connectSubresources = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// metricScope is upstream's scope label: resource (a named object, or a
// create), namespace, cluster, or empty for non-resource requests.
func metricScope(info *request.RequestInfo) string {
	switch {
	case info.Name != "" || info.Verb == request.VerbCreate:
		return "resource"
	case info.Namespace != "":
		return "namespace"
	case info.IsResourceRequest:
		return "cluster"
	}
	return ""
}

// metricDryRun is the dry_run label: "All" when ?dryRun=All, else empty.
func metricDryRun(r *http.Request) string {
	if r.URL.RawQuery == "" || !strings.Contains(r.URL.RawQuery, "dryRun") {
		return ""
	}
	for _, v := range r.URL.Query()["dryRun"] {
		if v == "All" {
			return "All"
		}
	}
	return ""
}

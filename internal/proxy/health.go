package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
)

// ToBeDeletedTaint marks a node the cluster autoscaler is about to remove;
// upstream's /healthz then fails so load balancers drain the node first.
const ToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler"

// ProxierHealth is one IP family's health, as upstream reports it.
type ProxierHealth struct {
	LastUpdated time.Time `json:"lastUpdated"`
	Healthy     bool      `json:"healthy"`
}

// ProxyHealth is the JSON body of /healthz and /livez, upstream's
// pkg/proxy/healthcheck ProxyHealth field for field.
type ProxyHealth struct {
	LastUpdated  time.Time                     `json:"lastUpdated"`
	CurrentTime  time.Time                     `json:"currentTime"`
	NodeEligible *bool                         `json:"nodeEligible,omitempty"`
	Healthy      bool                          `json:"healthy"`
	Status       map[v1.IPFamily]ProxierHealth `json:"status,omitempty"`
}

// Health reports whether the proxy keeps up, as upstream's ProxyHealthServer
// judges it: unhealthy while a change has waited for programming longer
// than twice the sync period (upstream's health timeout), or before the
// informers have listed once. One sync programs every family here, so the
// families share one state.
func (p *Proxier) Health() ProxyHealth {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.cfg.Clock.Now()
	h := ProxyHealth{CurrentTime: now, LastUpdated: p.mu.syncedAt, Healthy: p.mu.synced, Status: map[v1.IPFamily]ProxierHealth{}}
	if q := p.mu.queuedAt; !q.IsZero() && now.Sub(q) >= 2*p.cfg.SyncPeriod {
		h.Healthy = false
	}
	for _, f := range p.cfg.Families {
		fam := v1.IPv4Protocol
		if f == IPv6 {
			fam = v1.IPv6Protocol
		}
		h.Status[fam] = ProxierHealth{LastUpdated: p.mu.syncedAt, Healthy: h.Healthy}
	}
	return h
}

// nodeEligible says whether load balancers should send this node traffic:
// upstream's answer is no until the proxy has seen its Node, and once the
// Node is being deleted or the autoscaler has marked it for removal.
func (p *Proxier) nodeEligible() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.mu.node
	if n == nil || n.DeletionTimestamp != nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == ToBeDeletedTaint {
			return false
		}
	}
	return true
}

// HealthHandler serves /healthz (the proxy keeps up and its node is
// eligible for load-balanced traffic) and /livez (the proxy keeps up),
// with upstream's status codes, headers and JSON bodies.
func (p *Proxier) HealthHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		h := p.Health()
		eligible := p.nodeEligible()
		h.NodeEligible = &eligible
		p.cfg.Metrics.HealthzTotal.WithLabelValues(writeHealth(w, h, h.Healthy && eligible, p.cfg.Clock.Now())).Inc()
	})
	mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
		h := p.Health()
		p.cfg.Metrics.LivezTotal.WithLabelValues(writeHealth(w, h, h.Healthy, p.cfg.Clock.Now())).Inc()
	})
	return mux
}

// writeHealth answers with h and returns the status code written.
func writeHealth(w http.ResponseWriter, h ProxyHealth, healthy bool, now time.Time) string {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	code := http.StatusServiceUnavailable
	if healthy {
		// Upstream reports a healthy proxy as up to date now.
		h.LastUpdated = now
		code = http.StatusOK
	}
	w.WriteHeader(code)
	out, _ := json.Marshal(h)
	_, _ = w.Write(out)
	return strconv.Itoa(code)
}

package filters_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
)

// BenchmarkChain measures the per-request cost of the whole filter chain
// (a Lease renewal, the most frequent request at 10k nodes), without
// network and with a no-op handler.
func BenchmarkChain(b *testing.B) {
	const token = "benchmark-token-0123456789abcdef0123"
	reg := prometheus.NewRegistry()
	metrics, err := filters.WithMetrics(filters.MetricsConfig{Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	inflight, err := filters.WithMaxInFlight(filters.MaxInFlightConfig{Registerer: reg})
	if err != nil {
		b.Fatal(err)
	}
	h := filters.Chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}),
		filters.WithPanicRecovery(nil),
		filters.WithRequestInfo,
		metrics,
		filters.WithLogging(nil),
		filters.WithRequestDeadline(time.Minute),
		filters.WithBodyLimit(0),
		authn.WithAuthentication(authn.BearerToken(authn.NewAdminToken(token)), authn.Config{}),
		inflight,
		authz.WithAuthorization(authz.AlwaysAllow(), nil),
	)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1", http.NoBody)
		r.Header.Set("Authorization", "Bearer "+token)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}

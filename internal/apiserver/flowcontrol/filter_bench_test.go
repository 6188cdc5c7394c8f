package flowcontrol

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// BenchmarkFilter is flow control's cost per request on the hot paths —
// a pod create by a ServiceAccount (classified, estimated, queued and
// dispatched in workload-low), a node's lease renewal (node-high) and a
// ServiceAccount's list with a label selector (sized from the cache) —
// against the max-in-flight filter it replaces, with a handler that does
// nothing, so the figure is the filter alone.
func BenchmarkFilter(b *testing.B) {
	e := newEnv(b, nil, nil)
	noop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	inflight, err := filters.WithMaxInFlight(filters.MaxInFlightConfig{})
	if err != nil {
		b.Fatal(err)
	}
	podCreate := requestAs(b, "POST", "/api/v1/namespaces/default/pods",
		&request.User{Name: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", request.GroupAuthenticated}})
	leaseRenew := requestAs(b, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
		&request.User{Name: "system:node:n1", Groups: []string{"system:nodes", request.GroupAuthenticated}})
	saList := requestAs(b, "GET", "/api/v1/namespaces/default/configmaps?labelSelector=app%3Dx",
		&request.User{Name: "system:serviceaccount:default:app", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default", request.GroupAuthenticated}})
	adminGet := requestAs(b, "GET", "/api/v1/namespaces/default/pods/p",
		&request.User{Name: "admin", Groups: []string{request.GroupMasters, request.GroupAuthenticated}})
	for _, bc := range []struct {
		name string
		h    http.Handler
		r    *http.Request
	}{
		{"apf/pod-create", e.c.Filter(noop), podCreate},
		{"apf/lease-renewal", e.c.Filter(noop), leaseRenew},
		{"apf/list-with-selector", e.c.Filter(noop), saList},
		{"apf/exempt", e.c.Filter(noop), adminGet},
		{"max-inflight/pod-create", inflight(noop), podCreate},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					w := httptest.NewRecorder()
					bc.h.ServeHTTP(w, bc.r)
					if w.Code != http.StatusOK {
						b.Fatalf("code %d: %s", w.Code, w.Body)
					}
				}
			})
		})
	}
}

// requestAs is a request as the chain hands it to flow control: parsed
// and authenticated.
func requestAs(b *testing.B, method, path string, u *request.User) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	info, err := request.Parse(r)
	if err != nil {
		b.Fatal(err)
	}
	return r.WithContext(request.WithUser(request.WithRequestInfo(r.Context(), info), u))
}

package filters

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// blocker is a handler that holds every request carrying a "Block" header
// until released, so a test can fill the in-flight slots deterministically;
// other requests get 200 at once.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Block") == "" {
		return
	}
	b.entered <- struct{}{}
	<-b.release
}

func TestMaxInFlight(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	inflight, err := WithMaxInFlight(MaxInFlightConfig{
		MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1,
		ExemptGroups: []string{request.GroupMasters}, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	h := Chain(b, WithRequestInfo, inflight)

	// Fill both read-only slots and the one mutating slot.
	var wg sync.WaitGroup
	for _, r := range []*http.Request{
		httptest.NewRequest("GET", "/api/v1/pods", nil),
		httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/x", nil),
		httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods", nil),
	} {
		r.Header.Set("Block", "1")
		wg.Add(1)
		go func() { defer wg.Done(); serve(h, r) }()
		<-b.entered
	}
	gauge := func(kind string) float64 {
		return metricValue(t, reg, "apiserver_current_inflight_requests", map[string]string{"request_kind": kind})
	}
	if gauge("readOnly") != 2 || gauge("mutating") != 1 {
		t.Fatalf("gauges readOnly=%v mutating=%v, want 2 and 1", gauge("readOnly"), gauge("mutating"))
	}

	tests := []struct {
		name   string
		req    *http.Request
		reject bool
	}{
		{"read-only over the limit", httptest.NewRequest("GET", "/api/v1/nodes", nil), true},
		{"mutating over the limit", httptest.NewRequest("DELETE", "/api/v1/nodes/n", nil), true},
		{"watch is not counted", httptest.NewRequest("GET", "/api/v1/pods?watch=1", nil), false},
		{"legacy watch is not counted", httptest.NewRequest("GET", "/api/v1/watch/pods", nil), false},
		{"log is not counted", httptest.NewRequest("GET", "/api/v1/namespaces/ns/pods/x/log", nil), false},
		{"exempt group", withUser(httptest.NewRequest("GET", "/api/v1/nodes", nil), request.GroupMasters), false},
		{"non-exempt group", withUser(httptest.NewRequest("GET", "/api/v1/nodes", nil), request.GroupAuthenticated), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := serve(h, tt.req)
			if !tt.reject {
				if w.Code != http.StatusOK {
					t.Fatalf("code %d, want 200 despite full slots; body %s", w.Code, w.Body)
				}
				return
			}
			decodeStatus(t, w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests)
			if ra := w.Header().Get("Retry-After"); ra != "1" {
				t.Fatalf("Retry-After %q, want 1", ra)
			}
		})
	}

	close(b.release)
	wg.Wait()
	if gauge("readOnly") != 0 || gauge("mutating") != 0 {
		t.Fatalf("gauges not back to 0: readOnly=%v mutating=%v", gauge("readOnly"), gauge("mutating"))
	}
	// Slots were released: a request passes again.
	if w := serve(Chain(okHandler, WithRequestInfo, inflight), httptest.NewRequest("GET", "/api/v1/nodes", nil)); w.Code != http.StatusOK {
		t.Fatalf("after release: %d", w.Code)
	}
}

func TestMaxInFlightUnlimited(t *testing.T) {
	inflight, err := WithMaxInFlight(MaxInFlightConfig{MaxRequestsInFlight: -1, MaxMutatingRequestsInFlight: -1})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlocker()
	h := Chain(b, WithRequestInfo, inflight)
	var wg sync.WaitGroup
	for range 500 { // more than the defaults would allow
		wg.Add(1)
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/pods", nil)
		r.Header.Set("Block", "1")
		go func() { defer wg.Done(); serve(h, r) }()
		<-b.entered
	}
	close(b.release)
	wg.Wait()
}

func TestMaxInFlightRegistersTwice(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if _, err := WithMaxInFlight(MaxInFlightConfig{Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}

func withUser(r *http.Request, groups ...string) *http.Request {
	return r.WithContext(request.WithUser(r.Context(), &request.User{Name: "u", Groups: groups}))
}

package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRequestDeadline(t *testing.T) {
	const max = 60 * time.Second
	tests := []struct {
		url  string
		want time.Duration // 0: no deadline
	}{
		{"/api/v1/pods", max},
		{"/api/v1/pods?timeout=5s", 5 * time.Second},
		{"/api/v1/pods?timeout=0s", max},
		{"/api/v1/pods?timeout=10m", max},
		{"/api/v1/pods?timeout=-3s", max},
		{"/api/v1/pods?watch=true&timeout=5s", 0},
		{"/api/v1/namespaces/ns/pods/x/log", 0},
		{"/healthz?timeout=2s", 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			var got time.Duration
			var hasDeadline bool
			h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var deadline time.Time
				deadline, hasDeadline = r.Context().Deadline()
				got = time.Until(deadline)
			}), WithRequestInfo, WithRequestDeadline(max))
			serve(h, httptest.NewRequest("GET", tt.url, nil))
			if tt.want == 0 {
				if hasDeadline {
					t.Fatalf("deadline set on a long-running request")
				}
				return
			}
			// Allow for the time the request took to get here.
			if !hasDeadline || got > tt.want || got < tt.want-time.Second {
				t.Fatalf("deadline in %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRequestDeadlineBadTimeout(t *testing.T) {
	h := Chain(okHandler, WithRequestInfo, WithRequestDeadline(0))
	decodeStatus(t, serve(h, httptest.NewRequest("GET", "/api/v1/pods?timeout=soon", nil)), http.StatusBadRequest, metav1.StatusReasonBadRequest)
}

// TestRequestDeadlineExpires shows the contract with handlers: they watch
// ctx and report its error; the deadline becomes a 504 Timeout Status.
func TestRequestDeadlineExpires(t *testing.T) {
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		WriteStatusError(w, r.Context().Err())
	}), WithRequestInfo, WithRequestDeadline(time.Minute))
	decodeStatus(t, serve(h, httptest.NewRequest("GET", "/api/v1/pods?timeout=10ms", nil)), http.StatusGatewayTimeout, metav1.StatusReasonTimeout)
}

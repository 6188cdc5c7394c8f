package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWithWriteStackPassesEveryMethod(t *testing.T) {
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		called := false
		h := WithWriteStack(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, "/api/v1/pods", nil))
		if !called {
			t.Errorf("%s: next handler not called", method)
		}
	}
}

// deep recurses n frames of about 256 bytes each, as a merge of a nested
// object does.
//
//go:noinline
func deep(n int) int {
	var pad [224]byte
	pad[n%len(pad)] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[(n+1)%len(pad)])
}

// BenchmarkWriteStack runs a write-shaped handler (about 40 KiB of stack,
// reached 40 frames below the handler) on a fresh goroutine per request,
// as the HTTP/2 server does, with and without WithWriteStack.
func BenchmarkWriteStack(b *testing.B) {
	handler := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		var nest func(int)
		nest = func(k int) {
			if k == 0 {
				deep(160)
				return
			}
			nest(k - 1)
		}
		nest(40)
	})
	req := httptest.NewRequest(http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/x/leases/y", nil)
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"plain", handler}, {"WithWriteStack", WithWriteStack(handler)}} {
		b.Run(tc.name, func(b *testing.B) {
			done := make(chan struct{})
			for b.Loop() {
				go func() {
					tc.h.ServeHTTP(nil, req)
					done <- struct{}{}
				}()
				<-done
			}
		})
	}
}

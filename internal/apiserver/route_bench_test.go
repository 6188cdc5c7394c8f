package apiserver

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Per-request cost of a built-in resource's GET and create through the
// Server's handler, without HTTP or a client: what custom resources must
// not make slower (their handlers sit in a second, copy-on-write map that
// a built-in request never reads).

func BenchmarkConfigMapGet(b *testing.B) {
	e := newEnv(b)
	benchServe(b, e.api, http.MethodPost, "/api/v1/namespaces/default/configmaps", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench"},"data":{"k":"v"}}`), http.StatusCreated)
	// A consistent read first: the cache has the object from then on.
	benchServe(b, e.api, http.MethodGet, "/api/v1/namespaces/default/configmaps/bench", nil, http.StatusOK)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchServe(b, e.api, http.MethodGet, "/api/v1/namespaces/default/configmaps/bench?resourceVersion=0", nil, http.StatusOK)
	}
}

func BenchmarkConfigMapCreate(b *testing.B) {
	e := newEnv(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%d","labels":{"app":"bench"}},"data":{"k":"v"}}`, n.Add(1))
		benchServe(b, e.api, http.MethodPost, "/api/v1/namespaces/default/configmaps", []byte(body), http.StatusCreated)
	}
}

// benchServe sends one request to h and checks its status.
func benchServe(b *testing.B, h http.Handler, method, path string, body []byte, want int) {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
	}
}

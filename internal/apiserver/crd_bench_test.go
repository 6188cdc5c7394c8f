package apiserver

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// The same requests as BenchmarkConfigMapGet and BenchmarkConfigMapCreate
// for a custom resource: unstructured objects, JSON storage, the schema's
// prune/default/validate and field managers of its own.

func BenchmarkCustomResourceGet(b *testing.B) {
	e := newEnv(b)
	e.installCRD(b, testCRD())
	benchServe(b, e.api, http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets", []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"bench"},"spec":{"color":"red","replicas":1}}`), http.StatusCreated)
	// A consistent read first: the cache has the object from then on.
	benchServe(b, e.api, http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets/bench", nil, http.StatusOK)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchServe(b, e.api, http.MethodGet, "/apis/example.com/v1/namespaces/default/widgets/bench?resourceVersion=0", nil, http.StatusOK)
	}
}

func BenchmarkCustomResourceCreate(b *testing.B) {
	e := newEnv(b)
	e.installCRD(b, testCRD())
	var n atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w-%d","labels":{"app":"bench"}},"spec":{"color":"red","replicas":1}}`, n.Add(1))
		benchServe(b, e.api, http.MethodPost, "/apis/example.com/v1/namespaces/default/widgets", []byte(body), http.StatusCreated)
	}
}

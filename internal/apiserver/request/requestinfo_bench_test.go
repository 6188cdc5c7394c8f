package request

import (
	"net/http/httptest"
	"testing"
)

// Parse runs on every request; keep it allocation-light.
func BenchmarkParse(b *testing.B) {
	for _, url := range []string{
		"/api/v1/namespaces/kube-node-lease/leases/node-1234",
		"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=0",
		"/api/v1/namespaces/ns/pods?watch=true&resourceVersion=123&allowWatchBookmarks=true",
	} {
		r := httptest.NewRequest("GET", url, nil)
		b.Run(url, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

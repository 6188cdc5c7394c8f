package openapi

import (
	"net/http"
	"strings"

	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
)

// Paths the handler answers on.
const (
	PathV2 = "/openapi/v2"
	PathV3 = "/openapi/v3"
)

// newHandler serves o's documents through kube-openapi's services, which do
// content negotiation (JSON, and protobuf for clients that ask for it),
// gzip (v2), ETags with conditional requests, and for v3 the discovery
// document whose URLs carry each group-version document's hash, so that
// "?hash=" requests may be cached as immutable.
func newHandler(o *OpenAPI) http.Handler {
	mux := http.NewServeMux()
	v2 := handler.NewOpenAPIService(o.v2)
	v2.RegisterOpenAPIVersionedService(PathV2, mux)

	v3 := handler3.NewOpenAPIService()
	for _, key := range o.gvOrder {
		v3.UpdateGroupVersion(key, o.v3[key])
	}
	o.custom.v2svc, o.custom.v3svc = v2, v3
	mux.HandleFunc(PathV3, v3.HandleDiscovery)
	mux.HandleFunc(PathV3+"/", func(w http.ResponseWriter, r *http.Request) {
		// handler3 answers an unknown group-version with an empty 200;
		// clients expect a 404.
		key := strings.TrimPrefix(r.URL.Path, PathV3+"/")
		if _, ok := o.v3[key]; !ok && !o.custom.served(key) {
			http.NotFound(w, r)
			return
		}
		v3.HandleGroupVersion(w, r)
	})
	return mux
}

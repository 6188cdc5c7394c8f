// Package aggregator is the API aggregation layer: apiregistration.k8s.io/v1
// APIServices that name a Service are served by proxying to that Service
// (an extension API server such as metrics-server), and their discovery is
// merged into the server's own.
//
// It follows kube-aggregator's semantics (pkg/apiserver handler_proxy.go,
// handler_apis.go and handler_discovery.go; pkg/controllers/status and
// autoregister) and uses its published types, validation and helpers, but
// does not embed its server: kube-aggregator's APIAggregator is a
// k8s.io/apiserver GenericAPIServer with its own storage, filter chain,
// informers over a loopback clientset and OpenAPI aggregation, none of
// which Myriad's server (its own handlers, watch caches and filter chain)
// can host. What it does here instead:
//
//   - Handler wraps the API server's handler, after Myriad's filter chain
//     has authenticated and authorized the request (as upstream, where the
//     aggregator is the innermost delegate of the same chain). A request
//     under /apis/<group>/<version> whose APIService names a Service is
//     proxied (proxy.go) to a ready endpoint of that Service — resolved
//     from its EndpointSlices, as upstream with
//     --enable-aggregator-routing, because there is no kube-proxy on the
//     control plane — over HTTPS verified with spec.caBundle (or not, with
//     insecureSkipTLSVerify), presenting the front-proxy client
//     certificate, with the user in X-Remote-User, X-Remote-Group and
//     X-Remote-Extra-*. Watches and upgrades stream through
//     k8s.io/apimachinery's UpgradeAwareHandler without buffering. Anything
//     else goes to the API server.
//   - Discovery (discovery.go): /apis, /apis/<group> and the aggregated
//     apidiscovery.k8s.io/v2 document are the server's own, merged with the
//     group versions of remote APIServices, whose resources come from the
//     extension server's /apis/<group>/<version>, fetched by the
//     availability checks and cached (never fetched per request).
//   - OpenAPI v3 (openapi.go): /openapi/v3 lists the remote group versions
//     whose servers publish a document, and their documents are proxied;
//     the v2 document, which upstream merges into one spec, is the API
//     server's own.
//   - Availability (available.go): each remote APIService is checked
//     periodically and on every change of it, its Service or its
//     EndpointSlices, with upstream's reasons and messages, and the result
//     written to its Available condition; aggregator_unavailable_apiservice
//     reports it.
//   - Registration (autoregister.go): a Local APIService for every group
//     version the server serves, reconciled at start as upstream's
//     autoregister controller does; RegisterLocal/RemoveLocal for group
//     versions that come and go (CustomResourceDefinitions).
//   - The kube-system/extension-apiserver-authentication ConfigMap
//     (authconfig.go), from which extension servers learn which client CA
//     and which front-proxy CA and headers to trust.
//
// It reads APIServices, Services and EndpointSlices through client-go
// informers fed in-process from the server's watch caches, and writes
// through the server's own write path.
package aggregator

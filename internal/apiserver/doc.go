// Package apiserver serves the Kubernetes REST API over the store and the
// watch caches: routing, content negotiation (JSON, YAML, protobuf, Table,
// PartialObjectMetadata), the verbs and their resourceVersion semantics,
// watch streaming, discovery, the subresources that need more than a
// strategy (binding, eviction, scale, and status and approval, which write
// a part of the object through the registry's PartStrategy), and the
// resources with no stored objects (componentstatuses, computed when read;
// the legacy bindings; the authentication and authorization review APIs,
// answered from the authorizer and token authenticator given to the
// Server between New and Start, see reviews.go).
//
// Custom resources are served by the same machinery: the server's own CRD
// controller (crd_controller.go: names, Established, the cleanup
// finalizer) builds one resourceHandler per served version of every
// established CRD (crd_serve.go), over unstructured objects stored as JSON
// in the storage version. Built-in handlers are a map fixed at New; custom
// ones a copy-on-write map behind an atomic pointer, so no request takes
// a lock to find its handler.
//
// Request flow: filters (authn, authz, limits, metrics; see package
// filters) → Server.ServeHTTP → resourceHandler.serve → reads from the
// resource's cache.Cache, writes through its objectStore (read from the
// store, apply the registry strategy and the admission chain, see package
// admission and admission.go, then compare-and-swap). Each resource's
// cache sees the write through the store's watch; consistent reads wait
// for it, so a client always reads its own writes.
package apiserver

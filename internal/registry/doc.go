// Package registry describes every resource Myriad serves: its group, version,
// kind and names for discovery, and its behaviour as a strategy — defaulting,
// validation with upstream-shaped field errors, create/update preparation
// (status vs spec), the fields it can be selected by, and its table columns
// for kubectl get.
//
// The package is pure: it knows nothing about storage or HTTP. The API server
// consumes a Registry and applies each Resource's strategy around its store.
// One file per resource (or small family of resources).
//
// Layout: resource.go is the contract; registry.go builds the immutable
// Registry (New, Lookup*); strategy.go turns a per-Kind behavior (plain
// funcs for defaults, validation, status carry-over and generation) into
// Strategy and StatusStrategy, so the resource files hold only upstream's
// Kind-specific rules; podspec_*.go are the pod-spec defaults and validation
// shared by pods and every workload template; table.go holds the printer
// helpers, measured against an injectable clock (Options.Now).
//
// Defaulting mirrors upstream's SetDefaults_* and, for pods, the admission
// plugins whose effect users always see (DefaultTolerationSeconds, the
// lookup-free part of Priority, the service-account name).
//
// Two resources have no objects in the store: componentstatuses (computed
// by the API server when read) and bindings (a POST that binds a pod).
// Their registry entries give discovery, OpenAPI and tables what they
// need; the API server serves their verbs itself.
package registry

// Package registry describes every resource Myriad serves: its group, version,
// kind and names for discovery, and its behaviour as a strategy — defaulting,
// validation with upstream-shaped field errors, create/update preparation
// (status vs spec), the fields it can be selected by, and its table columns
// for kubectl get.
//
// The package is pure: it knows nothing about storage or HTTP. The API server
// consumes a Registry and applies each Resource's strategy around its store.
// One file per resource (or small family of resources).
package registry

// Package controlplane assembles the processes `myriad up` and
// `myriad apiserver` run: credentials, the store, the API server with its
// filter chain and authorizers (authorization.go: --authorization-mode),
// the TLS/HTTP2 listener, OpenAPI, metrics and pprof, and an
// orderly shutdown. It is the only place these parts meet; cmd/myriad maps
// flags onto its Config.
package controlplane

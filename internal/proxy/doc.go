// Package proxy is the per-node service proxy's model and loop: it turns
// Services and EndpointSlices (fed by client-go informers) into per-service
// views — which endpoints serve cluster traffic and which serve node-local
// traffic, per IP family — and hands the views of changed Services to a
// Backend in batches paced like upstream's BoundedFrequencyRunner.
//
// The endpoint-selection rules (ready, then serving-terminating fallback,
// topology hints, traffic policies) follow upstream's pkg/proxy/topology.go;
// the packet-level programming lives in the backends (internal/proxy/nftables).
//
// It also serves what load balancers ask a node: /healthz and /livez with
// upstream's semantics and JSON (health.go), and the health check node
// port of each LoadBalancer Service with externalTrafficPolicy Local,
// answering 200 while the node has ready endpoints of it (servicehealth.go).
package proxy

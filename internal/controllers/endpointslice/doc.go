// Package endpointslice is the EndpointSlice controller: for every Service
// with a selector it keeps discovery.k8s.io/v1 EndpointSlices listing the
// selected pods — ready, serving and terminating conditions, ports by name
// with named targetPorts resolved from each pod's container ports, at most
// 100 endpoints per slice — and changes as few slices as it can: a change
// to one pod rewrites only the slice holding it.
package endpointslice

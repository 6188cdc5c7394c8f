// Package framework holds the scheduler's data model: the per-pod facts the
// plugins need, computed once (PodInfo: requests as upstream computes them,
// host ports, parsed affinity terms), and the per-node aggregate the cache
// keeps up to date (NodeInfo: allocatable, requested, ports, pods). It also
// defines Status, the result of a filter, whose reasons are upstream's
// strings so unschedulable messages read like kube-scheduler's.
//
// It depends only on k8s.io/api, apimachinery and component-helpers, never on
// client-go, so the scheduling core runs without an API server.
package framework

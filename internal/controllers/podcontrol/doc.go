// Package podcontrol holds what the workload controllers (replicaset,
// deployment, daemonset, job, statefulset) share, each piece as upstream's
// pkg/controller does it: creation/deletion expectations so a controller
// never acts twice on a lagging cache, slow-start batching of creations,
// adoption and release of pods by selector and controller ownerReference,
// the ranking of pods to delete on scale-down, pod readiness/availability,
// the pod-template hash, the handler turning owned objects' events into
// their controllers' keys (OwnedEvents) and parallel pod deletion. The
// queue and workers are package reconcile's.
package podcontrol

// Package cache is the scheduler's incremental view of the cluster: one
// NodeInfo per node, updated in place from informer deltas (node and
// assigned-pod add/update/delete) and from the scheduler's own decisions
// (assume a pod on a node before its binding is confirmed, forget it if the
// binding fails). It is never rebuilt from scratch per pod.
//
// Assumed pods count against their node exactly like bound ones, so two
// pods scheduled back to back never see the same free room. When the pod
// informer reports the pod bound, the assumed entry is replaced by the
// confirmed one; if the confirmation never arrives, Cleanup expires the
// assumption after a TTL, as upstream's cache does.
package cache

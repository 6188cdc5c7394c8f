// Package podgc is the pod garbage collector: it force-deletes pods nothing
// else will remove — pods bound to nodes that no longer exist (after a
// quarantine, confirmed by a live read), terminating pods that were never
// scheduled, terminating pods on not-ready nodes taken out of service
// (node.kubernetes.io/out-of-service), and the oldest finished pods beyond a
// threshold (kube-controller-manager's "pod-garbage-collector").
package podgc

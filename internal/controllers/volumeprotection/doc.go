// Package volumeprotection holds kube-controller-manager's "pvc-protection"
// and "pv-protection" controllers, the other half of the
// StorageObjectInUseProtection admission plugin: a claim being deleted
// keeps its kubernetes.io/pvc-protection finalizer while a scheduled pod
// uses it (found in the pod cache, confirmed by a live list before the
// finalizer goes, as upstream), and a volume being deleted keeps
// kubernetes.io/pv-protection while it is Bound. Both also add their
// finalizer to objects created without it (before the plugin existed).
//
// As upstream, a scheduled pod counts as a user whatever its phase: the
// claim is released when such pods are deleted (a pod force-deleted or
// done with its volumes — deletionTimestamp with grace period 0 — no
// longer counts for a generic ephemeral volume).
package volumeprotection

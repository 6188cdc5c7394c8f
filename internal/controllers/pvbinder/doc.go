// Package pvbinder is kube-controller-manager's "persistentvolume-binder":
// it binds PersistentVolumeClaims to PersistentVolumes and follows a
// volume through its phases.
//
// A claim without spec.volumeName binds to the best Available volume that
// satisfies it (same class, accessModes a superset, capacity at least the
// request, same volumeMode, selector matching): a volume pre-bound to the
// claim through spec.claimRef wins, otherwise the smallest one, among the
// volumes with the fewest access modes (upstream's access-mode index). A
// claim naming spec.volumeName binds to that volume. Binding writes, in
// upstream's order, pv.spec.claimRef (with the claim's UID, and
// pv.kubernetes.io/bound-by-controller when the controller chose it), the
// volume's phase Bound, pvc.spec.volumeName with
// pv.kubernetes.io/bind-completed, then the claim's status (Bound,
// capacity, accessModes).
//
// Claims whose class has volumeBindingMode WaitForFirstConsumer are left
// to the scheduler, which pre-binds a volume (claimRef) or, for dynamic
// provisioning, sets volume.kubernetes.io/selected-node; the controller
// then completes the binding, or hands the claim to the class's external
// provisioner (the storage-provisioner annotations and an
// ExternalProvisioning event: Myriad runs no provisioner itself).
//
// When a bound claim goes away its volume is Released. Retain keeps it so;
// Delete deletes it where upstream's in-tree deleter would (hostPath under
// /tmp/, whose directory lives on no real node here, so only the object
// goes), waits for the external deleter of CSI and externally provisioned
// volumes, and otherwise marks the volume Failed with upstream's
// VolumeFailedDelete event, as kube-controller-manager does for volume
// kinds that have no deleter; Recycle, deprecated, has no recycler here
// and fails the same way with VolumeFailedRecycle.
//
// Every claim and volume is also resynced every 15 s (upstream's
// --pvclaimbinder-sync-period), so a claim waiting for a volume binds
// once one appears and events for waiting claims repeat, as upstream.
package pvbinder

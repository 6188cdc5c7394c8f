// Package storageprotection is upstream's StorageObjectInUseProtection
// admission plugin: every PersistentVolumeClaim is created with the
// kubernetes.io/pvc-protection finalizer and every PersistentVolume with
// kubernetes.io/pv-protection, so that deleting one still in use (a claim
// mounted by a scheduled pod, a volume bound to a claim) only marks it
// Terminating; the protection controllers remove the finalizers once the
// object is no longer in use.
package storageprotection

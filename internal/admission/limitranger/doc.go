// Package limitranger is upstream's LimitRanger admission plugin: a pod
// created in a namespace with LimitRanges gets their Container defaults
// (default limits, defaultRequest) on every container and init container
// that leaves a resource unset, noted in the kubernetes.io/limit-ranger
// annotation; then pods (on create) and persistentvolumeclaims (on create
// and update) are refused with 403 when they break a range's min, max or
// maxLimitRequestRatio, per Container, per Pod, or per
// PersistentVolumeClaim.
//
// Defaults are applied in the mutating phase and limits checked in the
// validating phase, as upstream, so a mutating plugin after this one
// cannot slip a pod past the ranges. Its cost for a namespace without
// LimitRanges is one read of the limitranges watch cache.
package limitranger

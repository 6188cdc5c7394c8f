// Package statefulset is the StatefulSet controller ("statefulset" in
// kube-controller-manager): pods with stable identities "<set>-<ordinal>"
// (ordinals from spec.ordinals.start), hostname and subdomain
// (spec.serviceName), the statefulset.kubernetes.io/pod-name,
// apps.kubernetes.io/pod-index and controller-revision-hash labels, and one
// PersistentVolumeClaim per volumeClaimTemplate and ordinal, named
// "<template>-<set>-<ordinal>" and created before the pod that mounts it.
//
// OrderedReady creates pods one at a time in ordinal order, each only once
// its predecessors are Running and Ready, and removes surplus pods highest
// ordinal first, one at a time; Parallel creates and deletes without
// waiting. Failed pods are deleted and recreated under the same name.
// RollingUpdate replaces pods whose revision is not the update revision,
// highest ordinal first, one at a time, only those at or above
// rollingUpdate.partition, waiting for each replacement to be Ready;
// OnDelete leaves replacement to the user. Status: replicas, readyReplicas,
// availableReplicas (minReadySeconds), currentReplicas, updatedReplicas,
// currentRevision, updateRevision, observedGeneration.
//
// Simplifications against upstream: Myriad's API does not serve
// ControllerRevisions, so a revision is "<set>-<template hash>" computed
// from the current template and no history is kept: a pod below the
// partition that is recreated gets the current template (upstream restores
// the old revision's), and `kubectl rollout undo statefulset` has nothing
// to roll back to. rollingUpdate.maxUnavailable is treated as 1, and
// persistentVolumeClaimRetentionPolicy as Retain/Retain (PVCs are never
// deleted by the controller).
package statefulset

// Package deployment is the Deployment controller ("deployment" in
// kube-controller-manager). It owns one ReplicaSet per pod template,
// named "<deployment>-<pod-template-hash>" with the hash computed as
// upstream's (podcontrol.ComputeHash), so `kubectl rollout
// history/undo/status` read and drive it exactly as they do upstream:
//
//   - RollingUpdate honours maxSurge and maxUnavailable (ints or
//     percentages, surge rounded up and unavailable down), cleaning up
//     unhealthy old replicas first; Recreate scales old ReplicaSets to
//     zero and waits for their pods to be gone before scaling up the new.
//   - The revision annotation (deployment.kubernetes.io/revision) and
//     revision-history are kept as upstream; a rollback (`kubectl rollout
//     undo` patches the template back) finds the old ReplicaSet by
//     template and gives it the next revision.
//   - Scaling a deployment mid-rollout scales its ReplicaSets
//     proportionally (desired-replicas/max-replicas annotations).
//   - Paused deployments only scale; old ReplicaSets beyond
//     revisionHistoryLimit are deleted once a rollout completes.
//   - Status: observedGeneration, replicas, updatedReplicas,
//     readyReplicas, availableReplicas, unavailableReplicas,
//     collisionCount, the Available condition and the Progressing
//     condition with reasons NewReplicaSetCreated, FoundNewReplicaSet,
//     ReplicaSetUpdated, NewReplicaSetAvailable, ProgressDeadlineExceeded,
//     DeploymentPaused, DeploymentResumed and ReplicaSetCreateError.
//
// Left out: the deprecated spec.rollbackTo / rollback-to annotation path
// (extensions/v1beta1; kubectl has not used it for years).
package deployment

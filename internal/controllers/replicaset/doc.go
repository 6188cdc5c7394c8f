// Package replicaset is the ReplicaSet controller ("replicaset" in
// kube-controller-manager): it keeps spec.replicas active pods for each
// ReplicaSet, creating them in slow-start batches (1, 2, 4, …, at most 500
// per sync) and deleting the lowest-ranked first, adopts orphan pods its
// selector matches and releases pods that stop matching, and reports
// status (replicas, fullyLabeled, ready, available with minReadySeconds,
// observedGeneration, the ReplicaFailure condition).
//
// The same sync is the ReplicationController controller
// ("replicationcontroller"): a kind (kind.go) says how to read and write
// the controlled objects, and ReplicationControllers are converted to
// ReplicaSets in memory (their map selector as matchLabels) with status
// written back to the ReplicationController, as upstream's replication
// manager wraps its ReplicaSet controller. Pods name the
// ReplicationController as their controller.
//
// Expectations make it safe on a lagging cache: after issuing creations or
// deletions it does not compute a new diff until the informer has shown
// them (or ExpectationsTTL passed).
//
// Simplifications against upstream: no special handling of terminating
// pods (the DeploymentReplicaSetTerminatingReplicas gate) and no
// logarithmic bucketing of ready time when ranking pods for deletion.
package replicaset

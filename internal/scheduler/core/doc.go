// Package core is the scheduling algorithm and loop, free of client-go: it
// pops pods from the queue, filters and scores nodes of the cache's
// snapshot with the plugins, assumes the chosen node in the cache and binds
// asynchronously through a Binder; pods that fit nowhere are reported
// through a Reporter (condition + event) and may preempt lower-priority
// pods. The API layer (package scheduler) and the benchmark supply Binder
// and Reporter.
//
// Scale mechanisms, each switchable in Config:
//
//   - Equivalence classes: pods with identical scheduling-relevant specs
//     (same requests, selectors, affinity, tolerations, labels, priority)
//     share one PreFilter and one feasibility search; a batch of them is
//     then placed from a max-heap of the feasible nodes' scores, re-checking
//     and re-scoring only the node that just received a pod.
//   - Relaxed randomization: the search stops once enough feasible nodes
//     are found (upstream's adaptive percentageOfNodesToScore: 50% at 100
//     nodes, down to 5%, at least 100 nodes), starting where the previous
//     search stopped so load rotates over the cluster.
//   - Parallel filtering: nodes are filtered by several goroutines in
//     chunks, stopping together once enough are feasible.
//   - The incremental cache (package cache) instead of a per-pod snapshot.
package core

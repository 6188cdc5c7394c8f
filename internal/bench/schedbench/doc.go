// Package schedbench measures the scheduler's core in-process, without an
// API server (like the CoreOS benchmark and upstream's scheduler_perf):
// nodes and pods are fed straight into the cache and the queue, bindings
// are recorded in memory, and the report gives pods/s and placement quality
// (the spread of allocated CPU fraction across nodes) for each combination
// of the scale mechanisms (equivalence classes, sampling).
package schedbench

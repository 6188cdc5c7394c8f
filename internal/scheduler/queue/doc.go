// Package queue is the scheduling queue, shaped like upstream's
// PriorityQueue: an active heap (highest priority first, then oldest), a
// backoff heap for pods that failed recently (1s doubling to 10s per
// attempt), and an unschedulable set of pods waiting for a cluster event
// (node added or changed, pod deleted) that could make them fit.
// Unschedulable pods also return to active after a maximum stay (5 min) so
// nothing waits forever on a missed event. A failure that raced with such an
// event goes to backoff instead of unschedulable, so the event is not lost.
//
// Pods carry an equivalence-class key; PopClass takes the active pods of a
// class at once so the core can place them as a batch.
package queue

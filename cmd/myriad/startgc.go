package main

import (
	"os"
	"runtime/debug"
)

// startGCPercent is the garbage collector's target while a control plane
// starts. The start builds its long-lived state (the key index, the watch
// caches from their images or lists, the Node authorizer's graph) while
// decoding objects it drops at once; at the default 100 the collector
// marks the growing live heap each time it doubles. Measured on a
// 1,000,000-object store (docs/bench/scale.md, session 35): a start to
// /readyz took 9.1 s on average at 100 and 7.8 s at 400, the RSS at ready
// about 5 % higher. The memory limit (--memory-limit, GOMEMLIMIT) still
// bounds the heap.
const startGCPercent = 400

// raiseGCForStart sets startGCPercent unless GOGC is set in the
// environment (the operator's choice stands) and returns the function
// that restores the previous setting.
func raiseGCForStart() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(startGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

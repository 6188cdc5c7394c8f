package flowcontrol

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// listGate bounds the bytes of big LIST answers being produced at once,
// across priority levels, to the machine's budget (ListBudgetPerCore ×
// cores). APF bounds seats per level, and a level's seats cannot tell
// nine 12 MB lists from nine small ones without making the big ones so
// wide they run alone and hold the level's small requests behind them;
// the gate, run before APF classifies a list (so lists waiting their
// turn hold no seats), lets the levels' small requests through while the
// big lists take turns, in arrival order: their encoding
// buffers, and the garbage collection they cause, stay within the
// budget however many are admitted. A list bigger than the budget runs
// when nothing else holds any of it.
type listGate struct {
	sem    *semaphore.Weighted
	budget int64
	// min is the smallest answer gated: below it a list is a small
	// request and goes straight through.
	min int64
}

func newListGate(budget int64) *listGate {
	return &listGate{sem: semaphore.NewWeighted(budget), budget: budget, min: max(budget/16, 1)}
}

// acquire waits for bytes of budget (at most all of it) and returns its
// release; ok is false when ctx ended first.
func (g *listGate) acquire(ctx context.Context, bytes int64) (release func(), ok bool) {
	if bytes < g.min {
		return func() {}, true
	}
	n := min(bytes, g.budget)
	if err := g.sem.Acquire(ctx, n); err != nil {
		return nil, false
	}
	return func() { g.sem.Release(n) }, true
}

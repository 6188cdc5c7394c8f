package flowcontrol

import (
	"context"
	"sync"
)

// listGate bounds the bytes of big LIST answers being produced at once,
// across priority levels, to the machine's budget (ListBudgetPerCore ×
// cores). APF bounds seats per level, and a level's seats cannot tell
// nine 12 MB lists from nine small ones without making the big ones so
// wide they run alone and hold the level's small requests behind them;
// the gate, run before APF classifies a list (so lists waiting their
// turn hold no seats), lets the levels' small requests through while the
// big lists take turns: their encoding buffers, and the garbage
// collection they cause, stay within the budget however many are
// admitted. A list bigger than the budget runs when nothing else holds
// any of it.
//
// Turns are fair between flows (users): each flow waits in its own
// queue, and the flows' heads are admitted round robin, so one client
// running forty lists back to back delays another's single list by one
// turn, not by forty. Admission is strictly in turn order — a big list
// at the head is not overtaken by smaller ones behind it — so big lists
// are never starved.
type listGate struct {
	budget int64
	// min is the smallest answer gated: below it a list is a small
	// request and goes straight through.
	min int64

	mu   sync.Mutex
	used int64
	// turns are the flows with waiters, in the order they are served;
	// flows indexes them by key.
	turns []*gateFlow
	flows map[string]*gateFlow
}

type gateFlow struct {
	key     string
	waiters []*gateWaiter
}

type gateWaiter struct {
	n     int64
	ready chan struct{}
}

func newListGate(budget int64) *listGate {
	return &listGate{budget: budget, min: max(budget/16, 1), flows: map[string]*gateFlow{}}
}

// acquire waits for bytes of budget (at most all of it) in flow's queue
// and returns its release; ok is false when ctx ended first.
func (g *listGate) acquire(ctx context.Context, flow string, bytes int64) (release func(), ok bool) {
	if bytes < g.min {
		return func() {}, true
	}
	n := min(bytes, g.budget)
	g.mu.Lock()
	if len(g.turns) == 0 && g.used+n <= g.budget {
		g.used += n
		g.mu.Unlock()
		return func() { g.release(n) }, true
	}
	w := &gateWaiter{n: n, ready: make(chan struct{})}
	f := g.flows[flow]
	if f == nil {
		f = &gateFlow{key: flow}
		g.flows[flow] = f
		g.turns = append(g.turns, f)
	}
	f.waiters = append(f.waiters, w)
	g.mu.Unlock()

	select {
	case <-w.ready:
		return func() { g.release(n) }, true
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready:
		// Admitted while giving up: hand the bytes back.
		g.used -= n
	default:
		g.remove(f, w)
	}
	// Leaving may let the next turn in (a big head gone, or bytes back).
	g.dispatch()
	return nil, false
}

func (g *listGate) release(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.used -= n
	g.dispatch()
}

// dispatch admits flows' heads in turn while they fit. Called with mu held.
func (g *listGate) dispatch() {
	for len(g.turns) > 0 {
		f := g.turns[0]
		w := f.waiters[0]
		if g.used+w.n > g.budget {
			return
		}
		g.used += w.n
		close(w.ready)
		f.waiters = f.waiters[1:]
		g.turns = g.turns[1:]
		if len(f.waiters) > 0 {
			g.turns = append(g.turns, f)
		} else {
			delete(g.flows, f.key)
		}
	}
}

// remove takes a waiter that gave up out of its flow. Called with mu held.
func (g *listGate) remove(f *gateFlow, w *gateWaiter) {
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			break
		}
	}
	if len(f.waiters) > 0 {
		return
	}
	delete(g.flows, f.key)
	for i, x := range g.turns {
		if x == f {
			g.turns = append(g.turns[:i], g.turns[i+1:]...)
			return
		}
	}
}

// inUse is the budget held by admitted lists.
func (g *listGate) inUse() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.used
}

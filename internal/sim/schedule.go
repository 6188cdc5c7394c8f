package sim

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// task is one piece of work due at a time. fn gets the time it was due for,
// so recurring work can stay on its grid and lateness can be measured.
type task struct {
	due time.Time
	seq uint64 // FIFO among tasks due at the same time
	fn  func(due time.Time)
}

type taskHeap []task

func (h taskHeap) Len() int { return len(h) }
func (h taskHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h taskHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *taskHeap) Push(x any)   { *h = append(*h, x.(task)) }
func (h *taskHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = task{}
	*h = old[:len(old)-1]
	return t
}

// scheduler runs tasks at their due time on a bounded pool of workers: one
// goroutine and one timer for any number of pending tasks, instead of a
// ticker per node. Workers are started as the work needs them, up to the
// bound, and then kept: a pool sized for a burst (one pod worker per node)
// costs nothing until the burst comes. When every worker is busy the
// scheduler waits for one, and that wait shows up as dispatch delay (and
// as lateness of the work).
type scheduler struct {
	clock   clock.Clock
	slack   time.Duration
	workers int
	work    chan task
	wake    chan struct{}

	mu struct {
		sync.Mutex
		heap taskHeap
		seq  uint64
		// inflight counts tasks popped and not yet finished.
		inflight int
	}

	// started counts the worker goroutines started; only the dispatcher
	// touches it.
	started int

	// dispatch is the delay from due time to a worker starting the task.
	dispatch *durHist
	// saturated counts tasks that found every worker busy.
	saturated atomic.Uint64
	busy      atomic.Int64
	maxBusy   atomic.Int64
}

func newScheduler(c clock.Clock, workers int) *scheduler {
	return &scheduler{
		clock:    c,
		slack:    slack,
		workers:  workers,
		work:     make(chan task),
		wake:     make(chan struct{}, 1),
		dispatch: newDurHist(),
	}
}

// at schedules fn to run at due (at once if due has passed). Safe for
// concurrent use, including from inside a task.
func (s *scheduler) at(due time.Time, fn func(due time.Time)) {
	s.mu.Lock()
	s.mu.seq++
	wasFirst := s.mu.heap.Len() == 0 || due.Before(s.mu.heap[0].due)
	heap.Push(&s.mu.heap, task{due: due, seq: s.mu.seq, fn: fn})
	s.mu.Unlock()
	if wasFirst {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// idle reports whether nothing is running and nothing is due at now.
func (s *scheduler) idle(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.inflight == 0 && (s.mu.heap.Len() == 0 || s.mu.heap[0].due.After(now.Add(s.slack)))
}

// start runs the dispatcher, and the workers it starts, until ctx is done;
// wg is done when all of them have returned. Tasks still pending are
// dropped.
func (s *scheduler) start(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.dispatchLoop(ctx, wg)
	}()
}

// startWorker starts one more worker, which runs first and then whatever
// the dispatcher hands it. The dispatcher's own count in wg keeps wg from
// reaching zero while it adds to it.
func (s *scheduler) startWorker(ctx context.Context, wg *sync.WaitGroup, first task) {
	s.started++
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.runTask(first)
		for {
			select {
			case <-ctx.Done():
				return
			case t := <-s.work:
				s.runTask(t)
			}
		}
	}()
}

func (s *scheduler) runTask(t task) {
	n := s.busy.Add(1)
	for {
		m := s.maxBusy.Load()
		if n <= m || s.maxBusy.CompareAndSwap(m, n) {
			break
		}
	}
	s.dispatch.observe(s.clock.Since(t.due))
	t.fn(t.due)
	s.busy.Add(-1)
	s.mu.Lock()
	s.mu.inflight--
	s.mu.Unlock()
}

// slack lets the dispatcher take tasks due up to this much in the future
// along with those due now: at 10,000 nodes renewals are due every
// millisecond, and waking once per task would cost more CPU than running it.
// 10 ms (ten renewals at 10,000 nodes) is nothing against a 40 s Lease and
// cut the simulator's idle CPU by about a seventh against 2 ms.
const slack = 10 * time.Millisecond

func (s *scheduler) dispatchLoop(ctx context.Context, wg *sync.WaitGroup) {
	var ready []task
	timer := s.clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.clock.Now()
		ready = ready[:0]
		for s.mu.heap.Len() > 0 && !s.mu.heap[0].due.After(now.Add(s.slack)) {
			ready = append(ready, heap.Pop(&s.mu.heap).(task))
			s.mu.inflight++
		}
		wait := time.Duration(-1)
		if len(ready) == 0 && s.mu.heap.Len() > 0 {
			wait = s.mu.heap[0].due.Sub(now)
		}
		s.mu.Unlock()

		for i, t := range ready {
			select {
			case s.work <- t:
			default:
				if s.started < s.workers {
					s.startWorker(ctx, wg, t)
					ready[i] = task{}
					continue
				}
				s.saturated.Add(1)
				select {
				case s.work <- t:
				case <-ctx.Done():
					return
				}
			}
			ready[i] = task{}
		}
		if len(ready) > 0 {
			continue
		}

		if wait < 0 {
			wait = time.Hour // nothing pending: sleep until woken
		}
		// One timer, reset each round: no allocation per wake-up.
		if !timer.Stop() {
			select {
			case <-timer.C():
			default:
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C():
		}
	}
}

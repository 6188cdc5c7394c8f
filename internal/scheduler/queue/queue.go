package queue

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("scheduling queue closed")

// Defaults, as upstream's.
const (
	DefaultInitialBackoff       = time.Second
	DefaultMaxBackoff           = 10 * time.Second
	DefaultMaxUnschedulableStay = 5 * time.Minute
)

// QueuedPod is a pending pod and its scheduling history.
type QueuedPod struct {
	Info *framework.PodInfo
	// Class is the equivalence-class key ("" = none).
	Class string
	// Timestamp is when the pod last entered the queue; InitialAttempt is
	// when it was first added (for the e2e latency metric).
	Timestamp, InitialAttempt time.Time
	Attempts                  int

	where   int // which structure holds it
	index   int // heap index
	backoff time.Time
}

const (
	inNone = iota
	inActive
	inBackoff
	inUnschedulable
	inFlight
)

// Lengths are the pod counts per sub-queue, for scheduler_pending_pods.
type Lengths struct{ Active, Backoff, Unschedulable int }

// Queue is safe for concurrent use.
type Queue struct {
	clock                      clock.WithTicker
	initialBackoff, maxBackoff time.Duration
	maxUnschedulable           time.Duration
	onChange                   func(Lengths)

	mu struct {
		sync.Mutex
		cond          *sync.Cond
		active        podHeap
		backoff       podHeap
		unschedulable map[types.UID]*QueuedPod
		pods          map[types.UID]*QueuedPod
		// byClass indexes the active pods per equivalence class.
		byClass map[string]map[types.UID]*QueuedPod
		// cycle counts pops; moveCycle is the cycle of the last move event.
		cycle, moveCycle int64
		closed           bool
	}
}

// Config configures a Queue; zero fields get the defaults.
type Config struct {
	Clock                clock.WithTicker
	InitialBackoff       time.Duration
	MaxBackoff           time.Duration
	MaxUnschedulableStay time.Duration
	// OnChange, if set, is called (with the lock held; keep it cheap) after
	// every change with the new lengths.
	OnChange func(Lengths)
}

// New returns an empty queue.
func New(cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.MaxUnschedulableStay <= 0 {
		cfg.MaxUnschedulableStay = DefaultMaxUnschedulableStay
	}
	q := &Queue{clock: cfg.Clock, initialBackoff: cfg.InitialBackoff, maxBackoff: cfg.MaxBackoff, maxUnschedulable: cfg.MaxUnschedulableStay, onChange: cfg.OnChange}
	q.mu.cond = sync.NewCond(&q.mu.Mutex)
	q.mu.active = podHeap{less: activeLess, where: inActive}
	q.mu.backoff = podHeap{less: func(a, b *QueuedPod) bool { return a.backoff.Before(b.backoff) }, where: inBackoff}
	q.mu.unschedulable = map[types.UID]*QueuedPod{}
	q.mu.pods = map[types.UID]*QueuedPod{}
	q.mu.byClass = map[string]map[types.UID]*QueuedPod{}
	return q
}

func activeLess(a, b *QueuedPod) bool {
	if a.Info.Priority != b.Info.Priority {
		return a.Info.Priority > b.Info.Priority
	}
	return a.Timestamp.Before(b.Timestamp)
}

// Add queues a new pending pod, or updates it if already known.
func (q *Queue) Add(pi *framework.PodInfo, class string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.mu.pods[pi.Pod.UID]; ok {
		q.updateLocked(qp, pi, class)
		return
	}
	now := q.clock.Now()
	qp := &QueuedPod{Info: pi, Class: class, Timestamp: now, InitialAttempt: now}
	q.mu.pods[pi.Pod.UID] = qp
	q.pushActiveLocked(qp)
	q.changedLocked()
}

// updateLocked applies a spec/label update. A pod waiting as unschedulable
// gets another chance now, as upstream does on a pod update.
func (q *Queue) updateLocked(qp *QueuedPod, pi *framework.PodInfo, class string) {
	switch qp.where {
	case inActive:
		q.removeLocked(qp)
		qp.Info, qp.Class = pi, class
		q.pushActiveLocked(qp)
	case inBackoff:
		heap.Remove(&q.mu.backoff, qp.index)
		qp.Info, qp.Class = pi, class
		qp.where = inNone
		q.pushActiveLocked(qp)
	case inUnschedulable:
		delete(q.mu.unschedulable, qp.Info.Pod.UID)
		qp.Info, qp.Class = pi, class
		qp.where = inNone
		q.pushActiveLocked(qp)
	default:
		// In flight: the scheduler holds it; the update lands on its
		// return via Requeue's latest-info check.
		qp.Info, qp.Class = pi, class
	}
	q.changedLocked()
}

// Delete forgets a pod (deleted, or bound by someone else).
func (q *Queue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp, ok := q.mu.pods[pod.UID]
	if !ok {
		return
	}
	q.removeLocked(qp)
	delete(q.mu.pods, pod.UID)
	q.changedLocked()
}

// removeLocked takes qp out of whichever structure holds it.
func (q *Queue) removeLocked(qp *QueuedPod) {
	switch qp.where {
	case inActive:
		heap.Remove(&q.mu.active, qp.index)
		q.unindexLocked(qp)
	case inBackoff:
		heap.Remove(&q.mu.backoff, qp.index)
	case inUnschedulable:
		delete(q.mu.unschedulable, qp.Info.Pod.UID)
	}
	qp.where = inNone
}

func (q *Queue) pushActiveLocked(qp *QueuedPod) {
	heap.Push(&q.mu.active, qp)
	if qp.Class != "" {
		m := q.mu.byClass[qp.Class]
		if m == nil {
			m = map[types.UID]*QueuedPod{}
			q.mu.byClass[qp.Class] = m
		}
		m[qp.Info.Pod.UID] = qp
	}
	q.mu.cond.Signal()
}

func (q *Queue) unindexLocked(qp *QueuedPod) {
	if qp.Class == "" {
		return
	}
	if m := q.mu.byClass[qp.Class]; m != nil {
		delete(m, qp.Info.Pod.UID)
		if len(m) == 0 {
			delete(q.mu.byClass, qp.Class)
		}
	}
}

// Pop blocks until an active pod is available, ctx is done or the queue is
// closed. The pod is in flight until Done, Requeue or AddUnschedulable.
func (q *Queue) Pop(ctx context.Context) (*QueuedPod, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.mu.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.mu.active.Len() == 0 {
		if q.mu.closed {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.mu.cond.Wait()
	}
	qp := heap.Pop(&q.mu.active).(*QueuedPod)
	q.unindexLocked(qp)
	qp.where = inFlight
	qp.Attempts++
	q.mu.cycle++
	q.changedLocked()
	return qp, nil
}

// PopClass takes up to max more active pods of class (for a batch), in no
// particular order. They are in flight like popped pods.
func (q *Queue) PopClass(class string, max int) []*QueuedPod {
	if class == "" || max <= 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.mu.byClass[class]
	var out []*QueuedPod
	for _, qp := range m {
		if len(out) == max {
			break
		}
		out = append(out, qp)
	}
	for _, qp := range out {
		heap.Remove(&q.mu.active, qp.index)
		q.unindexLocked(qp)
		qp.where = inFlight
		qp.Attempts++
	}
	if len(out) > 0 {
		q.changedLocked()
	}
	return out
}

// SchedulingCycle returns the current cycle, to pass to AddUnschedulable.
func (q *Queue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.mu.cycle
}

// Done ends an in-flight pod's stay (bound, or given up): the queue forgets it.
func (q *Queue) Done(uid types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp, ok := q.mu.pods[uid]; ok && qp.where == inFlight {
		delete(q.mu.pods, uid)
		q.changedLocked()
	}
}

// AddUnschedulable returns an in-flight pod that did not fit. If a move
// event happened since cycle (the cycle the attempt started in), the pod
// goes to backoff, since the event may have helped; else it waits in the
// unschedulable set.
func (q *Queue) AddUnschedulable(qp *QueuedPod, cycle int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur, ok := q.mu.pods[qp.Info.Pod.UID]
	if !ok || cur != qp || qp.where != inFlight {
		return // deleted meanwhile
	}
	qp.Timestamp = q.clock.Now()
	qp.backoff = qp.Timestamp.Add(q.backoffDuration(qp.Attempts))
	if q.mu.moveCycle >= cycle {
		qp.where = inNone
		heap.Push(&q.mu.backoff, qp)
	} else {
		qp.where = inUnschedulable
		q.mu.unschedulable[qp.Info.Pod.UID] = qp
	}
	q.changedLocked()
}

// Requeue returns an in-flight pod to backoff after an error (binding
// failed), to be retried after its backoff.
func (q *Queue) Requeue(qp *QueuedPod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur, ok := q.mu.pods[qp.Info.Pod.UID]
	if !ok || cur != qp || qp.where != inFlight {
		return
	}
	qp.Timestamp = q.clock.Now()
	qp.backoff = qp.Timestamp.Add(q.backoffDuration(qp.Attempts))
	qp.where = inNone
	heap.Push(&q.mu.backoff, qp)
	q.changedLocked()
}

func (q *Queue) backoffDuration(attempts int) time.Duration {
	d := q.initialBackoff
	for i := 1; i < attempts; i++ {
		d *= 2
		if d >= q.maxBackoff {
			return q.maxBackoff
		}
	}
	return d
}

// MoveAllToActiveOrBackoff is called on a cluster event that may make
// unschedulable pods fit: each goes to backoff if its backoff has not
// expired, else to active.
func (q *Queue) MoveAllToActiveOrBackoff() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for uid, qp := range q.mu.unschedulable {
		delete(q.mu.unschedulable, uid)
		qp.where = inNone
		if now.Before(qp.backoff) {
			heap.Push(&q.mu.backoff, qp)
		} else {
			q.pushActiveLocked(qp)
		}
	}
	q.mu.moveCycle = q.mu.cycle
	q.changedLocked()
}

// Flush moves pods whose backoff expired to active, and pods that stayed
// unschedulable longer than the maximum to active. Run calls it every
// second; tests call it with a fake clock.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for q.mu.backoff.Len() > 0 && !now.Before(q.mu.backoff.items[0].backoff) {
		qp := heap.Pop(&q.mu.backoff).(*QueuedPod)
		qp.where = inNone
		q.pushActiveLocked(qp)
	}
	for uid, qp := range q.mu.unschedulable {
		if now.Sub(qp.Timestamp) >= q.maxUnschedulable {
			delete(q.mu.unschedulable, uid)
			qp.where = inNone
			q.pushActiveLocked(qp)
		}
	}
	q.changedLocked()
}

// Run flushes every second until ctx is done, then closes the queue.
func (q *Queue) Run(ctx context.Context) {
	t := q.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return
		case <-t.C():
			q.Flush()
		}
	}
}

// Close wakes Pop callers with ErrClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mu.closed = true
	q.mu.cond.Broadcast()
}

// Lengths returns the sub-queue sizes.
func (q *Queue) Lengths() Lengths {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lengthsLocked()
}

func (q *Queue) lengthsLocked() Lengths {
	return Lengths{Active: q.mu.active.Len(), Backoff: q.mu.backoff.Len(), Unschedulable: len(q.mu.unschedulable)}
}

func (q *Queue) changedLocked() {
	if q.onChange != nil {
		q.onChange(q.lengthsLocked())
	}
}

// podHeap is a heap of QueuedPods that tracks each one's index.
type podHeap struct {
	items []*QueuedPod
	less  func(a, b *QueuedPod) bool
	where int
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index, h.items[j].index = i, j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPod)
	qp.index = len(h.items)
	qp.where = h.where
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	qp.index = -1
	return qp
}

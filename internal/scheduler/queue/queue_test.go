package queue

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

func pod(name string, prio int32) *framework.PodInfo {
	return framework.NewPodInfo(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}, Spec: v1.PodSpec{Priority: &prio}})
}

func newQueue() (*Queue, *clocktesting.FakeClock) {
	c := clocktesting.NewFakeClock(time.Unix(1000, 0))
	return New(Config{Clock: c}), c
}

func pop(t *testing.T, q *Queue) *QueuedPod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	qp, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("pop: %v", err)
	}
	return qp
}

func TestPriorityThenFIFO(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("low", 0), "")
	c.Step(time.Millisecond)
	q.Add(pod("high", 10), "")
	c.Step(time.Millisecond)
	q.Add(pod("low2", 0), "")
	for _, want := range []string{"high", "low", "low2"} {
		if got := pop(t, q).Info.Pod.Name; got != want {
			t.Fatalf("popped %s, want %s", got, want)
		}
	}
}

func TestUnschedulableWaitsForEvent(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("a", 0), "")
	cycle := q.SchedulingCycle()
	qp := pop(t, q)
	q.AddUnschedulable(qp, cycle+1)
	if l := q.Lengths(); l.Unschedulable != 1 || l.Active != 0 {
		t.Fatalf("lengths %+v", l)
	}
	// Flushing alone does nothing before the max stay.
	c.Step(30 * time.Second)
	q.Flush()
	if l := q.Lengths(); l.Unschedulable != 1 {
		t.Fatalf("moved without an event: %+v", l)
	}
	q.MoveAllToActiveOrBackoff()
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("event did not activate: %+v", l)
	}
	// Max stay.
	qp = pop(t, q)
	q.AddUnschedulable(qp, q.SchedulingCycle()+1)
	c.Step(DefaultMaxUnschedulableStay)
	q.Flush()
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("max stay did not activate: %+v", l)
	}
}

func TestEventDuringAttemptGoesToBackoff(t *testing.T) {
	q, c := newQueue()
	q.Add(pod("a", 0), "")
	qp := pop(t, q)
	cycle := q.SchedulingCycle()
	q.MoveAllToActiveOrBackoff() // a node was added while we were scheduling
	q.AddUnschedulable(qp, cycle)
	if l := q.Lengths(); l.Backoff != 1 {
		t.Fatalf("lengths %+v, want backoff 1", l)
	}
	c.Step(DefaultInitialBackoff)
	q.Flush()
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("lengths %+v after backoff", l)
	}
}

func TestBackoffDoublesToMax(t *testing.T) {
	q, _ := newQueue()
	for attempts, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 9: 10 * time.Second} {
		if got := q.backoffDuration(attempts); got != want {
			t.Errorf("attempts %d: %v, want %v", attempts, got, want)
		}
	}
}

func TestPopClassAndDelete(t *testing.T) {
	q, _ := newQueue()
	for _, n := range []string{"a1", "a2", "a3"} {
		q.Add(pod(n, 0), "A")
	}
	q.Add(pod("b1", 0), "B")
	first := pop(t, q)
	rest := q.PopClass(first.Class, 10)
	if first.Class != "A" || len(rest) != 2 {
		t.Fatalf("first %s class %s, batch %d", first.Info.Pod.Name, first.Class, len(rest))
	}
	if l := q.Lengths(); l.Active != 1 {
		t.Fatalf("lengths %+v", l)
	}
	q.Delete(pod("b1", 0).Pod)
	if l := q.Lengths(); l.Active != 0 {
		t.Fatalf("delete left %+v", l)
	}
	// A deleted in-flight pod is not requeued.
	q.Delete(first.Info.Pod)
	q.AddUnschedulable(first, 0)
	if l := q.Lengths(); l.Unschedulable != 0 {
		t.Fatal("deleted pod requeued")
	}
}

func TestPopHonoursContext(t *testing.T) {
	q, _ := newQueue()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { _, err := q.Pop(ctx); done <- err }()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("pop returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pop did not return on cancel")
	}
}

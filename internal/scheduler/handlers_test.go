package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedcache "github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/core"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

type nopBinder struct{}

func (nopBinder) Bind(context.Context, *v1.Pod, string) error { return nil }

func newHandlers(t *testing.T) *handlers {
	t.Helper()
	c := schedcache.New(0)
	q := queue.New(queue.Config{})
	s, err := core.New(core.Config{Binder: nopBinder{}}, c, q)
	if err != nil {
		t.Fatal(err)
	}
	return &handlers{name: "default-scheduler", cache: c, queue: q, sched: s, equivalence: true}
}

func hpod(name, node, scheduler string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: node, SchedulerName: scheduler, Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}}}
}

func TestPodRouting(t *testing.T) {
	gated := hpod("gated", "", "default-scheduler")
	gated.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "wait"}}
	deleting := hpod("deleting", "", "default-scheduler")
	deleting.DeletionTimestamp = &metav1.Time{}
	done := hpod("done", "n1", "default-scheduler")
	done.Status.Phase = v1.PodSucceeded
	tests := []struct {
		name                  string
		pod                   *v1.Pod
		wantQueued, wantCache int
	}{
		{"pending, ours", hpod("p", "", "default-scheduler"), 1, 0},
		{"pending, other scheduler", hpod("p", "", "other"), 0, 0},
		{"gated", gated, 0, 0},
		{"terminating", deleting, 0, 0},
		{"bound", hpod("p", "n1", "default-scheduler"), 0, 1},
		{"bound by another scheduler still counts", hpod("p", "n1", "other"), 0, 1},
		{"finished", done, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHandlers(t)
			h.podHandler().OnAdd(tt.pod, false)
			if got := h.queue.Lengths().Active; got != tt.wantQueued {
				t.Errorf("queued %d, want %d", got, tt.wantQueued)
			}
			if got := h.cache.PodCount(); got != tt.wantCache {
				t.Errorf("cached %d, want %d", got, tt.wantCache)
			}
		})
	}
}

func TestPodLifecycleThroughHandlers(t *testing.T) {
	h := newHandlers(t)
	ph := h.podHandler()
	p := hpod("p", "", "default-scheduler")
	ph.OnAdd(p, false)

	// A status-only update (our own condition patch) does not requeue.
	qp, err := h.queue.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.queue.AddUnschedulable(qp, h.queue.SchedulingCycle()+1)
	withCond := p.DeepCopy()
	withCond.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
	ph.OnUpdate(p, withCond)
	if l := h.queue.Lengths(); l.Unschedulable != 1 || l.Active != 0 {
		t.Fatalf("status-only update moved the pod: %+v", l)
	}
	// A spec change (a toleration added) does.
	tolerating := withCond.DeepCopy()
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	ph.OnUpdate(withCond, tolerating)
	if l := h.queue.Lengths(); l.Active != 1 {
		t.Fatalf("spec update did not requeue: %+v", l)
	}

	// Bound: leaves the queue, enters the cache.
	bound := tolerating.DeepCopy()
	bound.Spec.NodeName = "n1"
	ph.OnUpdate(tolerating, bound)
	if l := h.queue.Lengths(); l.Active+l.Backoff+l.Unschedulable != 0 || h.cache.PodCount() != 1 {
		t.Fatalf("after bind: queue %+v cache %d", l, h.cache.PodCount())
	}
	// Finished: leaves the cache.
	finished := bound.DeepCopy()
	finished.Status.Phase = v1.PodFailed
	ph.OnUpdate(bound, finished)
	if h.cache.PodCount() != 0 {
		t.Fatal("finished pod still counted")
	}
}

func TestNodeUpdateMovesOnlyOnSchedulingChanges(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}
	heartbeat := n.DeepCopy()
	heartbeat.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	bigger := n.DeepCopy()
	bigger.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("2")
	cordoned := n.DeepCopy()
	cordoned.Spec.Unschedulable = true
	for _, tt := range []struct {
		name string
		new  *v1.Node
		want bool
	}{
		{"heartbeat", heartbeat, false},
		{"allocatable", bigger, true},
		{"cordon", cordoned, true},
	} {
		if got := nodeSchedulingChanged(n, tt.new); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

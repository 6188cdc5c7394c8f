package scheduler

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	schedcache "github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/core"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// handlers route informer events to the cache and the queue.
type handlers struct {
	name        string
	cache       *schedcache.Cache
	queue       *queue.Queue
	sched       *core.Scheduler
	equivalence bool
}

func (h *handlers) nodeHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			h.cache.AddNode(obj.(*v1.Node))
			h.queue.MoveAllToActiveOrBackoff()
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, n := oldObj.(*v1.Node), newObj.(*v1.Node)
			h.cache.UpdateNode(n)
			if nodeSchedulingChanged(old, n) {
				h.queue.MoveAllToActiveOrBackoff()
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				h.cache.RemoveNode(n.Name)
			}
		},
	}
}

// nodeSchedulingChanged: only changes that can make a pod fit move the
// unschedulable pods (not every status heartbeat).
func nodeSchedulingChanged(old, n *v1.Node) bool {
	return old.Spec.Unschedulable != n.Spec.Unschedulable ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, n.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints)
}

func assigned(p *v1.Pod) bool { return p.Spec.NodeName != "" }

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// ours reports whether p is a pending pod this scheduler should place.
func (h *handlers) ours(p *v1.Pod) bool {
	return !assigned(p) && p.Spec.SchedulerName == h.name && p.DeletionTimestamp == nil && len(p.Spec.SchedulingGates) == 0
}

func (h *handlers) enqueue(p *v1.Pod) {
	class := ""
	if h.equivalence {
		class = core.EquivalenceClass(p)
	}
	h.queue.Add(framework.NewPodInfo(p), class)
}

func (h *handlers) podHandler() cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*v1.Pod)
			switch {
			case assigned(p) && !terminal(p):
				h.cache.AddPod(p)
			case h.ours(p):
				h.enqueue(p)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, p := oldObj.(*v1.Pod), newObj.(*v1.Pod)
			switch {
			case assigned(p):
				h.queue.Delete(p)
				if terminal(p) {
					h.cache.RemovePod(p)
					h.queue.MoveAllToActiveOrBackoff()
					return
				}
				h.cache.UpdatePod(p)
			case h.ours(p):
				// Our own status patches (condition, nomination) are not a
				// reason to try again, nor is a stale update of a pod we
				// just assumed (its binding's update is on the way).
				if !podSpecChanged(old, p) || h.cache.IsAssumed(p) {
					return
				}
				h.enqueue(p)
			default:
				h.queue.Delete(p)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p, ok := obj.(*v1.Pod)
			if !ok {
				return
			}
			h.sched.NominatedPodDeleted(p)
			if assigned(p) {
				h.cache.RemovePod(p)
				h.queue.MoveAllToActiveOrBackoff()
				return
			}
			h.queue.Delete(p)
		},
	}
}

func podSpecChanged(old, p *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(old.Spec, p.Spec) ||
		!equality.Semantic.DeepEqual(old.Labels, p.Labels) ||
		!equality.Semantic.DeepEqual(old.DeletionTimestamp, p.DeletionTimestamp)
}

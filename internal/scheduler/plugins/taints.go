package plugins

import (
	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// This file is TaintToleration (filter and PreferNoSchedule score input)
// and NodeUnschedulable, which upstream treats as a NoSchedule taint.

func (s *State) filterUnschedulable(n *framework.NodeInfo) *framework.Status {
	if !n.Unschedulable {
		return nil
	}
	taint := v1.Taint{Key: unschedulableTaintKey, Effect: v1.TaintEffectNoSchedule}
	if v1helper.TolerationsTolerateTaint(logr.Discard(), s.Pod.Pod.Spec.Tolerations, &taint, enableComparisonOperator) {
		return nil
	}
	return statusUnschedulable
}

// filterTaints returns the status of the first NoSchedule/NoExecute taint
// the pod does not tolerate (upstream's FindMatchingUntoleratedTaint order),
// without allocating: the taints and their statuses were built when the
// node was cached.
func (s *State) filterTaints(n *framework.NodeInfo) *framework.Status {
	for i := range n.FilterTaints {
		if !v1helper.TolerationsTolerateTaint(logr.Discard(), s.Pod.Pod.Spec.Tolerations, &n.FilterTaints[i], enableComparisonOperator) {
			return n.TaintStatuses[i]
		}
	}
	return nil
}

// intolerablePreferNoSchedule counts n's PreferNoSchedule taints the pod
// does not tolerate. Only tolerations with effect PreferNoSchedule or none
// count, as upstream: tolerating a key for NoSchedule says nothing about
// wanting the node.
func (s *State) intolerablePreferNoSchedule(n *framework.NodeInfo) int64 {
	var c int64
	for i := range n.PreferTaints {
		t := &n.PreferTaints[i]
		tolerated := false
		for j := range s.Pod.Pod.Spec.Tolerations {
			tol := &s.Pod.Pod.Spec.Tolerations[j]
			if (tol.Effect == "" || tol.Effect == v1.TaintEffectPreferNoSchedule) && tol.ToleratesTaint(logr.Discard(), t, enableComparisonOperator) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			c++
		}
	}
	return c
}

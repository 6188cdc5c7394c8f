package podcontrol

import (
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// IsPodActive reports whether pod counts towards its controller's
// replicas: not Succeeded or Failed and not being deleted.
func IsPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// PodReadyCondition returns pod's Ready condition, or nil.
func PodReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// IsPodReady reports whether pod's Ready condition is True.
func IsPodReady(p *corev1.Pod) bool {
	c := PodReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// IsPodAvailable reports whether pod has been ready for at least
// minReadySeconds at now.
func IsPodAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	c := PodReadyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds == 0 {
		return true
	}
	d := time.Duration(minReadySeconds) * time.Second
	return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(d).Before(now)
}

// RankForDeletion sorts pods so the ones to delete first come first, in
// upstream's ActivePodsWithRanks order: unassigned before assigned;
// Pending before Unknown before Running; not ready before ready; lower
// controller.kubernetes.io/pod-deletion-cost before higher; more pods
// of the same controller on the node before fewer (spreads what remains);
// ready for less time before more; more container restarts before fewer;
// newer before older.
func RankForDeletion(pods []*corev1.Pod) {
	perNode := map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			perNode[p.Spec.NodeName]++
		}
	}
	rank := func(p *corev1.Pod) int {
		if p.Spec.NodeName == "" {
			return 0
		}
		return perNode[p.Spec.NodeName]
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
			return a.Spec.NodeName == ""
		}
		if pa, pb := phaseOrder(a.Status.Phase), phaseOrder(b.Status.Phase); pa != pb {
			return pa < pb
		}
		if ra, rb := IsPodReady(a), IsPodReady(b); ra != rb {
			return !ra
		}
		if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
			return ca < cb
		}
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra > rb
		}
		if IsPodReady(a) && IsPodReady(b) {
			ta, tb := PodReadyCondition(a).LastTransitionTime, PodReadyCondition(b).LastTransitionTime
			if !ta.Equal(&tb) {
				return afterOrZero(&ta.Time, &tb.Time)
			}
		}
		if ca, cb := maxRestarts(a), maxRestarts(b); ca != cb {
			return ca > cb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return afterOrZero(&a.CreationTimestamp.Time, &b.CreationTimestamp.Time)
		}
		return false
	})
}

func phaseOrder(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 3
}

func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	return m
}

// afterOrZero: a zero time sorts first, then later before earlier.
func afterOrZero(a, b *time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return a.IsZero() && !b.IsZero()
	}
	return a.After(*b)
}

// PodDeletionCostAnnotation lets users order scale-down (upstream's
// PodDeletionCost, GA): lower cost goes first; missing or invalid is 0.
const PodDeletionCostAnnotation = "controller.kubernetes.io/pod-deletion-cost"

func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[PodDeletionCostAnnotation]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func getCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

func (dc *Controller) newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string) appsv1.DeploymentCondition {
	now := metav1.NewTime(dc.Clock.Now())
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

// setCondition is upstream's SetDeploymentCondition: no change for the
// same status and reason; the transition time kept for the same status.
func setCondition(st *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(st, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var kept []appsv1.DeploymentCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
}

// calculateStatus derives d's status from its ReplicaSets.
func (dc *Controller) calculateStatus(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) appsv1.DeploymentStatus {
	all = nonNil(all)
	available := sumStatus(all, statusAvailable)
	unavailable := max(sumSpec(all)-available, 0)
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            sumStatus(all, statusReplicas),
		UpdatedReplicas:     sumStatus([]*appsv1.ReplicaSet{newRS}, statusReplicas),
		ReadyReplicas:       sumStatus(all, statusReady),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= desired(d)-maxUnavailable(d) {
		setCondition(&st, dc.newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability."))
	} else {
		setCondition(&st, dc.newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumUnavailable, "Deployment does not have minimum availability."))
	}
	return st
}

// syncStatusOnly writes the status computed from the ReplicaSets, without
// judging progress (scaling, paused deployments).
func (dc *Controller) syncStatusOnly(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := dc.calculateStatus(all, newRS, d)
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	d.Status = st
	_, err := dc.updateStatus(ctx, d)
	return err
}

// syncRolloutStatus writes the status and judges progress against the
// deadline, as upstream's syncRolloutStatus.
func (dc *Controller) syncRolloutStatus(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) error {
	st := dc.calculateStatus(all, newRS, d)
	if !hasProgressDeadline(d) {
		removeCondition(&st, appsv1.DeploymentProgressing)
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	complete := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	if hasProgressDeadline(d) && !complete {
		switch {
		case deploymentComplete(d, &st):
			msg := "Deployment has successfully progressed."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)
			}
			setCondition(&st, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSAvailable, msg))
		case progressing(d, &st):
			msg := "Deployment is progressing."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q is progressing.", newRS.Name)
			}
			c := dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonRSUpdated, msg)
			// Progress refreshes lastUpdateTime even with the same reason,
			// which is what the deadline is measured from.
			if cur != nil {
				if cur.Status == corev1.ConditionTrue {
					c.LastTransitionTime = cur.LastTransitionTime
				}
				removeCondition(&st, appsv1.DeploymentProgressing)
			}
			setCondition(&st, c)
		case dc.timedOut(d, &st):
			msg := "Deployment has timed out progressing."
			if newRS != nil {
				msg = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
			}
			setCondition(&st, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonTimedOut, msg))
		}
	}
	if f := replicaFailure(all, newRS); f != nil {
		setCondition(&st, *f)
	} else {
		removeCondition(&st, appsv1.DeploymentReplicaFailure)
	}
	if apiequality.Semantic.DeepEqual(d.Status, st) {
		dc.requeueStuck(d, st)
		return nil
	}
	d.Status = st
	_, err := dc.updateStatus(ctx, d)
	return err
}

// progressing: more updated, ready or available replicas, or fewer old.
func progressing(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	old := d.Status
	return st.UpdatedReplicas > old.UpdatedReplicas ||
		st.Replicas-st.UpdatedReplicas < old.Replicas-old.UpdatedReplicas ||
		st.ReadyReplicas > old.ReadyReplicas || st.AvailableReplicas > old.AvailableReplicas
}

func (dc *Controller) timedOut(d *appsv1.Deployment, st *appsv1.DeploymentStatus) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(st, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewRSAvailable {
		return false
	}
	if c.Reason == ReasonTimedOut {
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(dc.Clock.Now())
}

// requeueStuck schedules a check at the progress deadline: nothing else
// would wake a deployment that makes no progress.
func (dc *Controller) requeueStuck(d *appsv1.Deployment, st appsv1.DeploymentStatus) {
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || cur == nil || deploymentComplete(d, &st) || cur.Reason == ReasonTimedOut {
		return
	}
	key := d.Namespace + "/" + d.Name
	after := cur.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(dc.Clock.Now())
	if after < time.Second {
		dc.Queue.AddRateLimited(key)
		return
	}
	dc.Queue.AddAfter(key, after)
}

// replicaFailure lifts a ReplicaFailure condition of the new (or any)
// ReplicaSet onto the deployment.
func replicaFailure(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	find := func(rs *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				return &appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: c.Status,
					LastUpdateTime: c.LastTransitionTime, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
			}
		}
		return nil
	}
	if newRS != nil {
		if c := find(newRS); c != nil {
			return c
		}
	}
	for _, rs := range nonNil(all) {
		if c := find(rs); c != nil {
			return c
		}
	}
	return nil
}

// checkPausedConditions records pause and resume in the Progressing
// condition, so the deadline is not counted while paused.
func (dc *Controller) checkPausedConditions(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := getCondition(&d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return nil
	}
	pausedCond := cur != nil && cur.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused"))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed"))
	default:
		return nil
	}
	updated, err := dc.updateStatus(ctx, d)
	if err != nil {
		return err
	}
	*d = *updated
	return nil
}

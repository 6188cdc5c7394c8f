package replicaset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

func (rc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := rc.kind.get(ns, name)
	if apierrors.IsNotFound(err) {
		rc.exp.Delete(key)
		return nil
	}
	if err != nil {
		return err
	}
	needsSync := rc.exp.Satisfied(key) && rs.DeletionTimestamp == nil
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		rc.Log.Warn("invalid selector", "object", key, "err", err)
		return nil // nothing to do until the spec changes
	}
	all, err := podcontrol.PodsForOwner(rc.podInf, ns, rs.UID)
	if err != nil {
		return err
	}
	active := make([]*corev1.Pod, 0, len(all))
	for _, p := range all {
		if podcontrol.IsPodActive(p) {
			active = append(active, p)
		}
	}
	pods, err := podcontrol.Claim(ctx, rc.refManager(rs, selector), active)
	if err != nil {
		return err
	}

	var manageErr error
	if needsSync {
		manageErr = rc.manage(ctx, pods, rs, key)
	}
	status := calculateStatus(rs, pods, manageErr, rc.Clock.Now())
	updated, err := rc.updateStatus(ctx, rs, status)
	if err != nil {
		return errors.Join(manageErr, err)
	}
	if manageErr == nil && updated.Spec.MinReadySeconds > 0 &&
		updated.Status.ReadyReplicas == replicas(updated) && updated.Status.AvailableReplicas != replicas(updated) {
		rc.Queue.AddAfter(key, time.Duration(updated.Spec.MinReadySeconds)*time.Second)
	}
	return manageErr
}

func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func (rc *Controller) refManager(rs *appsv1.ReplicaSet, selector labels.Selector) *podcontrol.RefManager {
	getLive := func(ctx context.Context, name string, _ metav1.GetOptions) (*appsv1.ReplicaSet, error) {
		return rc.kind.getLive(ctx, rs.Namespace, name)
	}
	return podcontrol.NewRefManager(rs, rc.kind.gvk, selector, getLive, rc.Client.CoreV1().Pods(rs.Namespace).Patch)
}

// manage creates or deletes pods so len(pods) approaches spec.replicas,
// at most burst per call.
func (rc *Controller) manage(ctx context.Context, pods []*corev1.Pod, rs *appsv1.ReplicaSet, key string) error {
	diff := len(pods) - int(replicas(rs))
	switch {
	case diff < 0:
		n := min(-diff, rc.burst)
		// Expect before creating: the watch event of a created pod may
		// arrive before Create returns.
		rc.exp.Expect(key, n, nil)
		ref := podcontrol.ControllerRef(rs, rc.kind.gvk)
		owner := rc.kind.eventObject(rs)
		ok, err := podcontrol.SlowStartBatch(n, podcontrol.SlowStartInitialBatch, func() error {
			_, err := podcontrol.CreatePod(ctx, rc.Client, rc.recorder, owner, podcontrol.PodFromTemplate(&rs.Spec.Template, rs, ref))
			if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil
			}
			return err
		})
		// Creations never made will never be observed.
		for range n - ok {
			rc.exp.CreationObserved(key)
		}
		return err
	case diff > 0:
		n := min(diff, rc.burst)
		victims := append([]*corev1.Pod(nil), pods...)
		podcontrol.RankForDeletion(victims)
		victims = victims[:n]
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i], _ = reconcile.Key(p)
		}
		rc.exp.Expect(key, 0, keys)
		return podcontrol.DeletePods(ctx, rc.Client, rc.recorder, rc.kind.eventObject(rs), victims, rc.exp, key)
	}
	return nil
}

func calculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var fully, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if podcontrol.IsPodReady(p) {
			ready++
			if podcontrol.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas = int32(len(pods))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available

	failure := condition(st.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := ""
		if diff := len(pods) - int(replicas(rs)); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		var kept []appsv1.ReplicaSetCondition
		for _, c := range st.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				kept = append(kept, c)
			}
		}
		st.Conditions = kept
	}
	return st
}

func condition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// updateStatus writes status unless it and observedGeneration are already
// current, retrying once on a conflict with a fresh read.
func (rc *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	st.ObservedGeneration = rs.Generation
	if statusEqual(rs.Status, st) {
		return rs, nil
	}
	cur := rs.DeepCopy()
	for attempt := 0; ; attempt++ {
		cur.Status = st
		cur.Status.ObservedGeneration = cur.Generation
		updated, err := rc.kind.updateStatus(ctx, cur)
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return nil, fmt.Errorf("updating status of %s %s/%s: %w", rc.kind.gvk.Kind, rs.Namespace, rs.Name, err)
		}
		cur, err = rc.kind.getLive(ctx, rs.Namespace, rs.Name)
		if err != nil {
			return nil, fmt.Errorf("re-reading %s %s/%s: %w", rc.kind.gvk.Kind, rs.Namespace, rs.Name, err)
		}
	}
}

func statusEqual(a, b appsv1.ReplicaSetStatus) bool {
	if a.Replicas != b.Replicas || a.FullyLabeledReplicas != b.FullyLabeledReplicas ||
		a.ReadyReplicas != b.ReadyReplicas || a.AvailableReplicas != b.AvailableReplicas ||
		a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		if a.Conditions[i].Type != b.Conditions[i].Type || a.Conditions[i].Status != b.Conditions[i].Status ||
			a.Conditions[i].Reason != b.Conditions[i].Reason {
			return false
		}
	}
	return true
}

package deployment

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rolloutRolling moves one step of a rolling update: grow the new
// ReplicaSet within maxSurge, else shrink old ones within maxUnavailable.
func (dc *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.newAndOld(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)

	scaledUp, err := dc.reconcileNewRS(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if scaledUp {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	scaledDown, err := dc.reconcileOldRSs(ctx, all, activeRSs(old), newRS, d)
	if err != nil {
		return err
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if deploymentComplete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

func (dc *Controller) reconcileNewRS(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if rsReplicas(newRS) == desired(d) {
		return false, nil
	}
	if rsReplicas(newRS) > desired(d) {
		scaled, _, err := dc.scaleRS(ctx, newRS, desired(d), d)
		return scaled, err
	}
	scaled, _, err := dc.scaleRS(ctx, newRS, newRSNewReplicas(d, all, newRS), d)
	return scaled, err
}

func (dc *Controller) reconcileOldRSs(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumSpec(old) == 0 {
		return false, nil
	}
	minAvailable := desired(d) - maxUnavailable(d)
	newUnavailable := rsReplicas(newRS) - newRS.Status.AvailableReplicas
	maxScaledDown := sumSpec(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	// Unhealthy old replicas first: they would otherwise block the rollout.
	old, cleaned, err := dc.cleanupUnhealthy(ctx, old, d, maxScaledDown)
	if err != nil {
		return false, err
	}
	all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledDown, err := dc.scaleDownOldForRolling(ctx, all, old, d)
	if err != nil {
		return false, err
	}
	return cleaned+scaledDown > 0, nil
}

func (dc *Controller) cleanupUnhealthy(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment, maxCleanup int32) ([]*appsv1.ReplicaSet, int32, error) {
	byCreation(old)
	var total int32
	for i, rs := range old {
		if total >= maxCleanup {
			break
		}
		if rsReplicas(rs) == 0 || rsReplicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		n := min(maxCleanup-total, rsReplicas(rs)-rs.Status.AvailableReplicas)
		_, updated, err := dc.scaleRS(ctx, rs, rsReplicas(rs)-n, d)
		if err != nil {
			return nil, total, err
		}
		total += n
		old[i] = updated
	}
	return old, total, nil
}

func (dc *Controller) scaleDownOldForRolling(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := desired(d) - maxUnavailable(d)
	available := sumStatus(nonNil(all), statusAvailable)
	if available <= minAvailable {
		return 0, nil
	}
	byCreation(old)
	var total int32
	want := available - minAvailable
	for _, rs := range old {
		if total >= want {
			break
		}
		if rsReplicas(rs) == 0 {
			continue
		}
		n := min(rsReplicas(rs), want-total)
		if _, _, err := dc.scaleRS(ctx, rs, rsReplicas(rs)-n, d); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until none of
// their pods is left running, then scales the new one up.
func (dc *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.newAndOld(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaledDown := false
	for _, rs := range activeRSs(old) {
		scaled, _, err := dc.scaleRS(ctx, rs, 0, d)
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	running, err := dc.oldPodsRunning(newRS, old)
	if err != nil {
		return err
	}
	if running {
		return dc.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = dc.newAndOld(ctx, d, rsList, true); err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if _, _, err := dc.scaleRS(ctx, newRS, desired(d), d); err != nil {
		return err
	}
	if deploymentComplete(d, &d.Status) {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return dc.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether old ReplicaSets still have pods that are
// not finished (Pending, Running or Unknown).
func (dc *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) (bool, error) {
	if sumStatus(old, statusReplicas) > 0 {
		return true, nil
	}
	for _, rs := range old {
		if newRS != nil && rs.UID == newRS.UID {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil {
			continue
		}
		pods, err := dc.pods.Pods(rs.Namespace).List(sel)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if ref := metav1.GetControllerOfNoCopy(p); ref == nil || ref.UID != rs.UID {
				continue
			}
			if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
				return true, nil
			}
		}
	}
	return false, nil
}

// scaleRS sets rs's replicas (and its desired/max annotations), recording
// an event when the size changed.
func (dc *Controller) scaleRS(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (bool, *appsv1.ReplicaSet, error) {
	sizeChange := rsReplicas(rs) != size
	if !sizeChange && !replicasAnnotationsNeedUpdate(rs, desired(d), desired(d)+maxSurge(d)) {
		return false, rs, nil
	}
	from := rsReplicas(rs)
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &size
	setReplicasAnnotations(cp, desired(d), desired(d)+maxSurge(d))
	updated, err := dc.Client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, rs, fmt.Errorf("scaling replicaset %s/%s to %d: %w", rs.Namespace, rs.Name, size, err)
	}
	if sizeChange {
		dir := "up"
		if size < from {
			dir = "down"
		}
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, rs.Name, from, size)
	}
	return sizeChange, updated, nil
}

// cleanup deletes the oldest fully scaled-down ReplicaSets beyond
// revisionHistoryLimit.
func (dc *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if d.Spec.RevisionHistoryLimit == nil {
		return nil
	}
	var cleanable []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := int32(len(cleanable)) - *d.Spec.RevisionHistoryLimit
	if diff <= 0 {
		return nil
	}
	byRevision(cleanable)
	for _, rs := range cleanable[:diff] {
		if rs.Status.Replicas != 0 || rsReplicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := dc.Client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &rs.UID},
		})
		if err != nil && !isNotFoundOrConflict(err) {
			return fmt.Errorf("deleting old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

func byRevision(rss []*appsv1.ReplicaSet) {
	byCreation(rss)
	// Stable: equal revisions stay in creation order.
	for i := 1; i < len(rss); i++ {
		for j := i; j > 0 && revision(rss[j]) < revision(rss[j-1]); j-- {
			rss[j], rss[j-1] = rss[j-1], rss[j]
		}
	}
}

// isScalingEvent: an active ReplicaSet's desired-replicas annotation no
// longer matches the deployment's replicas.
func (dc *Controller) isScalingEvent(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old, err := dc.newAndOld(ctx, d, rsList, false)
	if err != nil {
		return false, err
	}
	for _, rs := range activeRSs(append(old, newRS)) {
		if n, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && n != desired(d) {
			return true, nil
		}
	}
	return false, nil
}

// syncScale handles paused deployments and scaling events: resize the
// ReplicaSets without rolling forward.
func (dc *Controller) syncScale(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := dc.newAndOld(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := dc.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := dc.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	// Status follows from the ReplicaSet update events this causes.
	return dc.syncStatusOnly(ctx, append(old, newRS), newRS, d)
}

// scale resizes ReplicaSets for a changed spec.replicas: all to the one
// active (or newest) ReplicaSet, or proportionally across several during
// a rolling update, as upstream's scale.
func (dc *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if target := activeOrLatest(newRS, old); target != nil {
		if rsReplicas(target) == desired(d) {
			return nil
		}
		_, _, err := dc.scaleRS(ctx, target, desired(d), d)
		return err
	}
	if saturated(d, newRS) {
		for _, rs := range activeRSs(old) {
			if _, _, err := dc.scaleRS(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRolling(d) {
		return nil
	}
	all := activeRSs(append(append([]*appsv1.ReplicaSet(nil), old...), newRS))
	var allowed int32
	if desired(d) > 0 {
		allowed = desired(d) + maxSurge(d)
	}
	toAdd := allowed - sumSpec(all)
	switch {
	case toAdd > 0:
		sortBySize(all, true)
	case toAdd < 0:
		sortBySize(all, false)
	}
	var added int32
	sizes := make([]int32, len(all))
	for i, rs := range all {
		sizes[i] = rsReplicas(rs)
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[i] = max(sizes[i]+toAdd-added, 0)
		}
		if _, _, err := dc.scaleRS(ctx, rs, sizes[i], d); err != nil {
			return err
		}
	}
	return nil
}

func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	sorted := append([]*appsv1.ReplicaSet(nil), old...)
	byCreation(sorted)
	for i, j := 0, len(sorted)-1; i < j; i, j = i+1, j-1 {
		sorted[i], sorted[j] = sorted[j], sorted[i]
	}
	active := activeRSs(append(append([]*appsv1.ReplicaSet(nil), sorted...), newRS))
	switch len(active) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return sorted[0]
	case 1:
		return active[0]
	}
	return nil
}

func saturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	n, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && n == desired(d) && rsReplicas(rs) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}

// sortBySize orders larger first; ties newer first when growing, older
// first when shrinking (upstream's ReplicaSetsBySizeNewer/Older).
func sortBySize(rss []*appsv1.ReplicaSet, newerFirst bool) {
	byCreation(rss)
	if newerFirst {
		for i, j := 0, len(rss)-1; i < j; i, j = i+1, j-1 {
			rss[i], rss[j] = rss[j], rss[i]
		}
	}
	for i := 1; i < len(rss); i++ {
		for j := i; j > 0 && rsReplicas(rss[j]) > rsReplicas(rss[j-1]); j-- {
			rss[j], rss[j-1] = rss[j-1], rss[j]
		}
	}
}

func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	frac := fraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(frac, allowed)
	}
	return max(frac, allowed)
}

func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if desired(d) == 0 {
		return -rsReplicas(rs)
	}
	total := desired(d) + maxSurge(d)
	annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
	if !ok {
		annotated = d.Status.Replicas
	}
	if annotated == 0 {
		return 0
	}
	size := float64(rsReplicas(rs)) * float64(total) / float64(annotated)
	return int32(size+0.5) - rsReplicas(rs)
}

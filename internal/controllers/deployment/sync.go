package deployment

import (
	"context"
	"fmt"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
)

func (dc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := dc.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()

	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() {
		// Upstream refuses to act on a selector that selects everything.
		dc.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			_, err = dc.updateStatus(ctx, d)
		}
		return err
	}
	rsList, err := dc.claimReplicaSets(ctx, d, selector)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		newRS := findNewRS(d, rsList)
		return dc.syncStatusOnly(ctx, rsList, newRS, d)
	}
	if err := dc.checkPausedConditions(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return dc.syncScale(ctx, d, rsList)
	}
	scaling, err := dc.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return dc.syncScale(ctx, d, rsList)
	}
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return dc.rolloutRecreate(ctx, d, rsList)
	}
	return dc.rolloutRolling(ctx, d, rsList)
}

func (dc *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := podcontrol.ForOwner[*appsv1.ReplicaSet](dc.rsInf, d.Namespace, d.UID)
	if err != nil {
		return nil, err
	}
	m := podcontrol.NewRefManager(d, controllerKind, selector,
		dc.Client.AppsV1().Deployments(d.Namespace).Get, dc.Client.AppsV1().ReplicaSets(d.Namespace).Patch)
	return podcontrol.Claim(ctx, m, all)
}

func (dc *Controller) updateStatus(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	updated, err := dc.Client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return updated, nil
}

// newAndOld finds the new ReplicaSet (creating it when create is set) and
// the old ones, syncing revision annotations as upstream's
// getAllReplicaSetsAndSyncRevision.
func (dc *Controller) newAndOld(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	existing := findNewRS(d, rsList)
	old := oldRSs(rsList, existing)
	newRS, err := dc.getNewRS(ctx, d, existing, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

func (dc *Controller) getNewRS(ctx context.Context, d *appsv1.Deployment, existing *appsv1.ReplicaSet, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	newRevision := strconv.FormatInt(maxRevision(old)+1, 10)
	if existing != nil {
		rs := existing.DeepCopy()
		annotationsChanged := setNewRSAnnotations(d, rs, newRevision, true)
		if annotationsChanged || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			updated, err := dc.Client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("updating replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
			}
			return updated, nil
		}
		needsUpdate := setDeploymentRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonFoundNewRS, fmt.Sprintf("Found new replica set %q", rs.Name)))
			needsUpdate = true
		}
		if needsUpdate {
			updated, err := dc.updateStatus(ctx, d)
			if err != nil {
				return nil, err
			}
			*d = *updated
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	template := *d.Spec.Template.DeepCopy()
	hash := podcontrol.ComputeHash(&template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, PodTemplateHashLabel, hash)
	selector := d.Spec.Selector.DeepCopy()
	if selector.MatchLabels == nil {
		selector.MatchLabels = map[string]string{}
	}
	selector.MatchLabels[PodTemplateHashLabel] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            d.Name + "-" + hash,
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*podcontrol.ControllerRef(d, controllerKind)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selector,
			Template:        template,
		},
	}
	*rs.Spec.Replicas = newRSNewReplicas(d, append(append([]*appsv1.ReplicaSet(nil), old...), rs), rs)
	setNewRSAnnotations(d, rs, newRevision, false)

	created, err := dc.Client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		alreadyExists = true
		live, getErr := dc.rsLister.ReplicaSets(d.Namespace).Get(rs.Name)
		if getErr == nil {
			if ref := metav1.GetControllerOfNoCopy(live); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &live.Spec.Template) {
				created, err = live, nil
				break
			}
		}
		// A hash collision: bump collisionCount so the next name differs.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if _, uerr := dc.updateStatus(ctx, d); uerr != nil {
			return nil, uerr
		}
		return nil, fmt.Errorf("replicaset %s/%s exists with a different template (hash collision): %w", rs.Namespace, rs.Name, err)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg))
			_, _ = dc.updateStatus(ctx, d)
		}
		dc.recorder.Event(d, corev1.EventTypeWarning, ReasonFailedRSCreate, msg)
		return nil, fmt.Errorf("creating replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if !alreadyExists && rsReplicas(created) > 0 {
		dc.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, rsReplicas(created))
	}
	needsUpdate := setDeploymentRevision(d, newRevision)
	if !alreadyExists && hasProgressDeadline(d) {
		setCondition(&d.Status, dc.newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated, fmt.Sprintf("Created new replica set %q", created.Name)))
		needsUpdate = true
	}
	if needsUpdate {
		updated, err := dc.updateStatus(ctx, d)
		if err != nil {
			return nil, err
		}
		*d = *updated
	}
	return created, nil
}

func withLabel(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// setDeploymentRevision sets d's revision annotation; written with its
// status, as upstream does (the status strategy keeps metadata changes).
func setDeploymentRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

// newRSNewReplicas is the size the new ReplicaSet may grow to now.
func newRSNewReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) int32 {
	if !isRolling(d) {
		return desired(d)
	}
	surge, _ := fenceposts(d)
	current := sumSpec(all)
	maxTotal := desired(d) + surge
	if current >= maxTotal {
		return rsReplicas(newRS)
	}
	up := min(maxTotal-current, desired(d)-rsReplicas(newRS))
	return rsReplicas(newRS) + up
}

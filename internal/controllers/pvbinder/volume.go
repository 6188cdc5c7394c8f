package pvbinder

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

func (c *Controller) syncVolumeKey(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncVolume(ctx, pv)
}

// syncVolume is upstream's: an unclaimed or merely pre-bound volume is
// Available; one whose claim is gone is Released and reclaimed; one
// whose claim is bound to it is Bound; one whose claim went elsewhere is
// unbound.
func (c *Controller) syncVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		_, err := c.updateVolumePhase(ctx, pv, corev1.VolumeAvailable, "")
		return err
	}
	pvc, err := c.claimOf(ctx, pv)
	if err != nil {
		return err
	}
	switch {
	case pvc == nil:
		if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
			c.Log.Info("volume released", "volume", pv.Name, "reclaimPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
			if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, pv)
	case pvc.Spec.VolumeName == "":
		if volumehelpers.CheckVolumeModeMismatches(&pvc.Spec, &pv.Spec) {
			c.recorder.Event(pv, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", pvc.Name))
			c.recorder.Event(pvc, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name))
			return nil
		}
		// Half bound (by us, the scheduler or a user): the claim's sync
		// finishes it.
		c.Enqueue(pvc)
		return nil
	case pvc.Spec.VolumeName == pv.Name:
		_, err = c.updateVolumePhase(ctx, pv, corev1.VolumeBound, "")
		return err
	case metav1.HasAnnotation(pv.ObjectMeta, volumehelpers.AnnDynamicallyProvisioned) && pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that bound elsewhere: not needed.
		if pv.Status.Phase != corev1.VolumeReleased && pv.Status.Phase != corev1.VolumeFailed {
			if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return c.reclaim(ctx, pv)
	default:
		return c.unbindVolume(ctx, pv)
	}
}

// claimOf returns the claim pv is bound to, nil when it no longer exists
// (or was re-created with another UID). A claim missing from the cache is
// confirmed by a live read before the volume is released, as upstream: a
// claim bound by the scheduler a moment ago may not be cached yet.
func (c *Controller) claimOf(ctx context.Context, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := pv.Spec.ClaimRef
	pvc, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	released := pv.Status.Phase == corev1.VolumeReleased || pv.Status.Phase == corev1.VolumeFailed
	if !released && (pvc == nil || pvc.UID != ref.UID) {
		live, err := c.Client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			pvc = nil
		case err != nil:
			return nil, fmt.Errorf("reading claim %s/%s of volume %s: %w", ref.Namespace, ref.Name, pv.Name, err)
		default:
			pvc = live
		}
	}
	if pvc != nil && pvc.UID != ref.UID {
		return nil, nil
	}
	return pvc, nil
}

// unbindVolume frees a volume whose claim bound another one: a binding
// the controller made is removed; a user's pre-binding keeps its claimRef
// without the UID, so it stays reserved for that claim.
func (c *Controller) unbindVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	clone := pv.DeepCopy()
	if metav1.HasAnnotation(pv.ObjectMeta, volumehelpers.AnnBoundByController) {
		clone.Spec.ClaimRef = nil
		delete(clone.Annotations, volumehelpers.AnnBoundByController)
		if len(clone.Annotations) == 0 {
			clone.Annotations = nil
		}
	} else {
		clone.Spec.ClaimRef.UID = ""
	}
	updated, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("unbinding volume %s: %w", pv.Name, err)
	}
	_, err = c.updateVolumePhase(ctx, updated, corev1.VolumeAvailable, "")
	return err
}

// tmpPath is where upstream's hostPath deleter agrees to delete.
var tmpPath = regexp.MustCompile("/tmp/.+")

// reclaim applies a released volume's reclaim policy (see the package
// doc for what Delete and Recycle do without in-tree plugins).
func (c *Controller) reclaim(ctx context.Context, pv *corev1.PersistentVolume) error {
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimRecycle:
		return c.failVolume(ctx, pv, reasonFailedRecycle, "No recycler plugin found for the volume!")
	case corev1.PersistentVolumeReclaimDelete:
		if pv.DeletionTimestamp != nil {
			return nil
		}
		switch deleter(pv) {
		case deleteExternal:
			return nil // the external provisioner deletes it
		case deleteHostPath:
			if !tmpPath.MatchString(pv.Spec.HostPath.Path) {
				return c.failVolume(ctx, pv, reasonFailedDelete, fmt.Sprintf("host_path deleter only supports /tmp/.+ but received provided %s", pv.Spec.HostPath.Path))
			}
			uid := pv.UID
			err := c.Client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting released volume %s: %w", pv.Name, err)
			}
			c.Log.Info("deleted released volume", "volume", pv.Name)
			return nil
		default:
			return c.failVolume(ctx, pv, reasonFailedDelete, "no deletable volume plugin matched")
		}
	}
	return nil // Retain
}

type deleterKind int

const (
	deleteNone deleterKind = iota
	deleteExternal
	deleteHostPath
)

// deleter is who deletes a volume under policy Delete: an external
// provisioner for CSI volumes and for volumes provisioned by one, the
// hostPath deleter for hostPath, nobody for the other in-tree kinds.
func deleter(pv *corev1.PersistentVolume) deleterKind {
	if by := pv.Annotations[volumehelpers.AnnDynamicallyProvisioned]; by != "" && !strings.HasPrefix(by, "kubernetes.io/") {
		return deleteExternal
	}
	switch {
	case pv.Spec.CSI != nil:
		return deleteExternal
	case pv.Spec.HostPath != nil:
		return deleteHostPath
	}
	return deleteNone
}

// failVolume sets phase Failed with message and emits the event once, when
// the phase changes.
func (c *Controller) failVolume(ctx context.Context, pv *corev1.PersistentVolume, reason, message string) error {
	if pv.Status.Phase == corev1.VolumeFailed && pv.Status.Message == message {
		return nil
	}
	updated, err := c.updateVolumePhase(ctx, pv, corev1.VolumeFailed, message)
	if err != nil {
		return err
	}
	c.recorder.Event(updated, corev1.EventTypeWarning, reason, message)
	return nil
}

// updateVolumePhase writes phase and message when either changes (the
// server records lastPhaseTransitionTime).
func (c *Controller) updateVolumePhase(ctx context.Context, pv *corev1.PersistentVolume, phase corev1.PersistentVolumePhase, message string) (*corev1.PersistentVolume, error) {
	if pv.Status.Phase == phase && pv.Status.Message == message {
		return pv, nil
	}
	clone := pv.DeepCopy()
	clone.Status.Phase, clone.Status.Message = phase, message
	updated, err := c.Client.CoreV1().PersistentVolumes().UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting volume %s phase %s: %w", pv.Name, phase, err)
	}
	return updated, nil
}

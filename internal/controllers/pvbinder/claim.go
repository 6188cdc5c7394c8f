package pvbinder

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// Upstream's event reasons (pkg/controller/volume/events).
const (
	reasonFailedBinding        = "FailedBinding"
	reasonVolumeMismatch       = "VolumeMismatch"
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonWaitForPodScheduled  = "WaitForPodScheduled"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonProvisioningFailed   = "ProvisioningFailed"
	reasonClaimLost            = "ClaimLost"
	reasonClaimMisbound        = "ClaimMisbound"
	reasonFailedDelete         = "VolumeFailedDelete"
	reasonFailedRecycle        = "VolumeFailedRecycle"

	// NoProvisioner is the provisioner of classes for statically
	// provisioned volumes (local volumes): nothing provisions for them.
	NoProvisioner = "kubernetes.io/no-provisioner"
)

func (c *Controller) syncClaimKey(ctx context.Context, ns, name string) error {
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.syncClaim(ctx, pvc)
}

// syncClaim is upstream's: a claim whose binding completed once is synced
// as bound, any other as unbound.
func (c *Controller) syncClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if metav1.HasAnnotation(pvc.ObjectMeta, volumehelpers.AnnBindCompleted) {
		return c.syncBoundClaim(ctx, pvc)
	}
	return c.syncUnboundClaim(ctx, pvc)
}

func (c *Controller) syncUnboundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeName != "" {
		return c.syncPreboundClaim(ctx, pvc)
	}
	class, err := c.class(pvc)
	if err != nil {
		return err
	}
	delay := class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	volumes, err := c.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	pv, err := FindBestMatch(pvc, volumes, delay)
	if err != nil {
		return fmt.Errorf("finding a volume for claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if pv != nil {
		return c.bind(ctx, pv, pvc)
	}
	switch {
	case delay && !volumehelpers.IsDelayBindingProvisioning(pvc):
		c.emitWaitingForConsumer(pvc)
	case volumehelpers.GetPersistentVolumeClaimClass(pvc) != "":
		return c.provision(ctx, pvc, class)
	default:
		c.recorder.Event(pvc, corev1.EventTypeNormal, reasonFailedBinding, "no persistent volumes available for this claim and no storage class is set")
	}
	_, err = c.updateClaimStatus(ctx, pvc, corev1.ClaimPending, nil)
	return err
}

// class is the claim's StorageClass, nil when it names none or one that
// does not exist (upstream treats both as immediate binding).
func (c *Controller) class(pvc *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := volumehelpers.GetPersistentVolumeClaimClass(pvc)
	if name == "" {
		return nil, nil
	}
	class, err := c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return class, err
}

// emitWaitingForConsumer is upstream's emitEventForUnboundDelayBindingClaim:
// it names the unscheduled pods using the claim, when there are any.
func (c *Controller) emitWaitingForConsumer(pvc *corev1.PersistentVolumeClaim) {
	reason, message := reasonWaitForFirstConsumer, "waiting for first consumer to be created before binding"
	var names []string
	if pods, err := c.pods.Pods(pvc.Namespace).List(labels.Everything()); err == nil {
		for _, p := range pods {
			if p.Spec.NodeName == "" && podUsesClaim(p, pvc.Name) {
				names = append(names, p.Name)
			}
		}
	}
	switch len(names) {
	case 0:
	case 1:
		reason, message = reasonWaitForPodScheduled, fmt.Sprintf("waiting for pod %s to be scheduled", names[0])
	default:
		reason, message = reasonWaitForPodScheduled, fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(names, ","))
	}
	c.recorder.Event(pvc, corev1.EventTypeNormal, reason, message)
}

// podUsesClaim reports whether pod mounts the claim name, directly or as
// a generic ephemeral volume.
func podUsesClaim(pod *corev1.Pod, name string) bool {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name ||
			v.Ephemeral != nil && pod.Name+"-"+v.Name == name {
			return true
		}
	}
	return false
}

// provision hands a claim with a class to that class's provisioner.
// Myriad runs no in-tree provisioner: a class with an external one gets
// upstream's storage-provisioner annotations and ExternalProvisioning
// event; a class without one ("kubernetes.io/no-provisioner", or
// a missing class) gets ProvisioningFailed.
func (c *Controller) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	className := volumehelpers.GetPersistentVolumeClaimClass(pvc)
	switch {
	case class == nil:
		c.recorder.Event(pvc, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("storageclass.storage.k8s.io %q not found", className))
	case class.Provisioner == NoProvisioner || strings.HasPrefix(class.Provisioner, "kubernetes.io/"):
		c.recorder.Event(pvc, corev1.EventTypeWarning, reasonProvisioningFailed, fmt.Sprintf("no volume plugin matched name: %s", class.Provisioner))
	default:
		if pvc.Annotations[volumehelpers.AnnStorageProvisioner] != class.Provisioner || pvc.Annotations[volumehelpers.AnnBetaStorageProvisioner] != class.Provisioner {
			clone := pvc.DeepCopy()
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volumehelpers.AnnStorageProvisioner, class.Provisioner)
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volumehelpers.AnnBetaStorageProvisioner, class.Provisioner)
			updated, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("annotating claim %s/%s for its provisioner: %w", pvc.Namespace, pvc.Name, err)
			}
			pvc = updated
		}
		c.recorder.Event(pvc, corev1.EventTypeNormal, reasonExternalProvisioning,
			fmt.Sprintf("Waiting for a volume to be created either by the external provisioner '%s' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered.", class.Provisioner))
	}
	_, err := c.updateClaimStatus(ctx, pvc, corev1.ClaimPending, nil)
	return err
}

// syncPreboundClaim binds a claim that names its volume.
func (c *Controller) syncPreboundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	pv, err := c.volumes.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		// Retried when the volume appears.
		_, err = c.updateClaimStatus(ctx, pvc, corev1.ClaimPending, nil)
		return err
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if err := CheckVolumeSatisfiesClaim(pv, pvc); err != nil {
			c.recorder.Event(pvc, corev1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %s", pv.Name, err))
			_, err = c.updateClaimStatus(ctx, pvc, corev1.ClaimPending, nil)
			return err
		}
		return c.bind(ctx, pv, pvc)
	case volumehelpers.IsVolumeBoundToClaim(pv, pvc):
		return c.bind(ctx, pv, pvc)
	case !metav1.HasAnnotation(pvc.ObjectMeta, volumehelpers.AnnBoundByController):
		c.recorder.Event(pvc, corev1.EventTypeWarning, reasonFailedBinding, fmt.Sprintf("volume %q already bound to a different claim.", pv.Name))
		_, err = c.updateClaimStatus(ctx, pvc, corev1.ClaimPending, nil)
		return err
	default:
		return fmt.Errorf("invalid binding of claim %s/%s to volume %q: volume already claimed by %s/%s", pvc.Namespace, pvc.Name, pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name)
	}
}

func (c *Controller) syncBoundClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.VolumeName == "" {
		return c.claimLost(ctx, pvc, reasonClaimLost, "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!")
	}
	pv, err := c.volumes.Get(pvc.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return c.claimLost(ctx, pvc, reasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
	}
	if err != nil {
		return err
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == pvc.UID {
		// Unbound volume (or a stale cache): bind again; bound: make sure
		// every step is done.
		return c.bind(ctx, pv, pvc)
	}
	return c.claimLost(ctx, pvc, reasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
}

// claimLost sets phase Lost and emits the event when the phase changes.
func (c *Controller) claimLost(ctx context.Context, pvc *corev1.PersistentVolumeClaim, reason, message string) error {
	if pvc.Status.Phase == corev1.ClaimLost {
		return nil
	}
	updated, err := c.updateClaimStatus(ctx, pvc, corev1.ClaimLost, nil)
	if err != nil {
		return err
	}
	c.recorder.Event(updated, corev1.EventTypeWarning, reason, message)
	return nil
}

// bind is upstream's: the volume's claimRef, its phase, the claim's
// volumeName and annotations, then the claim's status, each written only
// when it changes, so a bind interrupted half way is finished by the next
// sync of either object.
func (c *Controller) bind(ctx context.Context, pv *corev1.PersistentVolume, pvc *corev1.PersistentVolumeClaim) error {
	bound, dirty, err := volumehelpers.GetBindVolumeToClaim(pv, pvc)
	if err != nil {
		return err
	}
	if dirty {
		if pv, err = c.Client.CoreV1().PersistentVolumes().Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding volume %s to claim %s/%s: %w", bound.Name, pvc.Namespace, pvc.Name, err)
		}
	}
	if pv, err = c.updateVolumePhase(ctx, pv, corev1.VolumeBound, ""); err != nil {
		return err
	}
	if pvc, err = c.bindClaimToVolume(ctx, pvc, pv); err != nil {
		return err
	}
	_, err = c.updateClaimStatus(ctx, pvc, corev1.ClaimBound, pv)
	return err
}

func (c *Controller) bindClaimToVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	clone := pvc.DeepCopy()
	dirty := false
	if pvc.Spec.VolumeName != pv.Name {
		clone.Spec.VolumeName = pv.Name
		if !metav1.HasAnnotation(clone.ObjectMeta, volumehelpers.AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volumehelpers.AnnBoundByController, "yes")
		}
		dirty = true
	}
	if !metav1.HasAnnotation(clone.ObjectMeta, volumehelpers.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volumehelpers.AnnBindCompleted, "yes")
		dirty = true
	}
	if !dirty {
		return pvc, nil
	}
	updated, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("binding claim %s/%s to volume %s: %w", pvc.Namespace, pvc.Name, pv.Name, err)
	}
	return updated, nil
}

// updateClaimStatus sets the phase and, from pv (nil clears them), the
// claim's capacity and access modes, when any of them changes.
func (c *Controller) updateClaimStatus(ctx context.Context, pvc *corev1.PersistentVolumeClaim, phase corev1.PersistentVolumeClaimPhase, pv *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	clone := pvc.DeepCopy()
	clone.Status.Phase = phase
	if pv == nil {
		clone.Status.AccessModes, clone.Status.Capacity = nil, nil
	} else {
		clone.Status.AccessModes = pv.Spec.AccessModes
		volCap, ok := pv.Spec.Capacity[corev1.ResourceStorage]
		if !ok {
			return nil, fmt.Errorf("volume %s has no storage capacity", pv.Name)
		}
		if claimCap, ok := pvc.Status.Capacity[corev1.ResourceStorage]; !ok || volCap.Cmp(claimCap) != 0 {
			clone.Status.Capacity = pv.Spec.Capacity
		}
	}
	if equality.Semantic.DeepEqual(clone.Status, pvc.Status) {
		return pvc, nil
	}
	updated, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, clone, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("setting claim %s/%s phase %s: %w", pvc.Namespace, pvc.Name, phase, err)
	}
	return updated, nil
}

package volumeprotection

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/myriad-k8s/myriad/internal/admission/storageprotection"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// PVCName is the claim controller's name in --controllers (upstream's).
const PVCName = "pvc-protection"

// podClaimIndex indexes pods by the namespace/name of each claim they
// mount.
const podClaimIndex = "myriad.io/pvc-protection-claims"

// PVCDescriptor registers the claim controller with the manager.
func PVCDescriptor() controllerctx.Descriptor {
	return controllerctx.Describe(PVCName, 1, NewPVC)
}

// PVCController removes kubernetes.io/pvc-protection from unused claims
// being deleted.
type PVCController struct {
	reconcile.Base
	claims corelisters.PersistentVolumeClaimLister
	pods   cache.Indexer
}

// NewPVC watches claims, and pods for the claims they stop using.
func NewPVC(c *controllerctx.Context) (*PVCController, error) {
	pvcInf := c.Informers.Core().V1().PersistentVolumeClaims()
	podInf := c.Informers.Core().V1().Pods()
	if err := reconcile.AddIndexers(podInf.Informer(), cache.Indexers{podClaimIndex: claimsOfPod}); err != nil {
		return nil, fmt.Errorf("%s: pod index: %w", PVCName, err)
	}
	ctrl := &PVCController{claims: pvcInf.Lister(), pods: podInf.Informer().GetIndexer()}
	ctrl.Base = reconcile.NewBase(c, PVCName, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{pvcInf.Informer().HasSynced, podInf.Informer().HasSynced}
	if err := reconcile.Watch(pvcInf.Informer(), reconcile.Adds|reconcile.Updates, ctrl.Enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", PVCName, err)
	}
	// A pod's claims are rechecked on every pod event; pods without
	// claims cost one loop over their volumes.
	if err := reconcile.Watch(podInf.Informer(), reconcile.All, ctrl.enqueueClaimsOf); err != nil {
		return nil, fmt.Errorf("%s: %w", PVCName, err)
	}
	return ctrl, nil
}

func (c *PVCController) enqueueClaimsOf(obj any) {
	keys, _ := claimsOfPod(obj)
	for _, k := range keys {
		c.Queue.Add(k)
	}
}

// claimsOfPod is the index function: the namespace/name of every claim
// the pod mounts, generic ephemeral ones included.
func claimsOfPod(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var keys []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			keys = append(keys, pod.Namespace+"/"+ephemeral.VolumeClaimName(pod, v))
		}
	}
	return keys, nil
}

func (c *PVCController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	has := slices.Contains(pvc.Finalizers, storageprotection.PVCFinalizer)
	switch {
	case pvc.DeletionTimestamp != nil && has:
		used, err := c.inUse(ctx, pvc)
		if err != nil || used {
			return err
		}
		return c.setFinalizer(ctx, pvc, false)
	case pvc.DeletionTimestamp == nil && !has:
		return c.setFinalizer(ctx, pvc, true)
	}
	return nil
}

// inUse asks the pod cache, then, when the cache finds no user, the API
// server: a pod created a moment ago may not be cached yet, and removing
// the finalizer cannot be undone.
func (c *PVCController) inUse(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	objs, err := c.pods.ByIndex(podClaimIndex, pvc.Namespace+"/"+pvc.Name)
	if err != nil {
		return false, err
	}
	for _, o := range objs {
		if pod, ok := o.(*corev1.Pod); ok && PodUsesClaim(pod, pvc) {
			return true, nil
		}
	}
	pods, err := c.Client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("listing pods of namespace %s: %w", pvc.Namespace, err)
	}
	for i := range pods.Items {
		if PodUsesClaim(&pods.Items[i], pvc) {
			return true, nil
		}
	}
	return false, nil
}

// PodUsesClaim is upstream's podUsesPVC: only a scheduled pod counts (the
// kubelet refuses to start a pod whose claim is being deleted); a generic
// ephemeral volume counts only while the pod is not shut down and owns it.
func PodUsesClaim(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if pod.Spec.NodeName == "" || pod.Namespace != pvc.Namespace {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == pvc.Name {
			return true
		}
		if v.Ephemeral != nil && !podIsShutDown(pod) && ephemeral.VolumeClaimName(pod, v) == pvc.Name && ephemeral.VolumeIsForPod(pod, pvc) == nil {
			return true
		}
	}
	return false
}

// podIsShutDown: the kubelet is done with the pod, or it was
// force-deleted.
func podIsShutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

func (c *PVCController) setFinalizer(ctx context.Context, pvc *corev1.PersistentVolumeClaim, add bool) error {
	clone := pvc.DeepCopy()
	clone.Finalizers = withFinalizer(clone.Finalizers, storageprotection.PVCFinalizer, add)
	_, err := c.Client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating finalizers of claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	c.Log.Info("updated protection finalizer", "claim", pvc.Namespace+"/"+pvc.Name, "added", add)
	return nil
}

// withFinalizer returns fs with f added or removed.
func withFinalizer(fs []string, f string, add bool) []string {
	if add {
		return append(fs, f)
	}
	return slices.DeleteFunc(fs, func(s string) bool { return s == f })
}

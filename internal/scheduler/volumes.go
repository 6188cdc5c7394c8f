package scheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/myriad-k8s/myriad/internal/scheduler/core"
	"github.com/myriad-k8s/myriad/internal/scheduler/plugins"
)

// volumeListers adapts the claim, volume and class informers to
// plugins.VolumeLister.
type volumeListers struct {
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
}

var _ plugins.VolumeLister = volumeListers{}

func (l volumeListers) Claim(ns, name string) (*v1.PersistentVolumeClaim, error) {
	pvc, err := l.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pvc, err
}

func (l volumeListers) Volume(name string) (*v1.PersistentVolume, error) {
	pv, err := l.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pv, err
}

func (l volumeListers) Volumes(class string) ([]*v1.PersistentVolume, error) {
	all, err := l.volumes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*v1.PersistentVolume
	for _, pv := range all {
		if volumehelpers.GetPersistentVolumeClass(pv) == class {
			out = append(out, pv)
		}
	}
	return out, nil
}

func (l volumeListers) Class(name string) (*storagev1.StorageClass, error) {
	sc, err := l.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sc, err
}

// apiVolumeBinder is VolumeBinding's PreBind over the API: it pre-binds
// the chosen volumes (claimRef and pv.kubernetes.io/bound-by-controller,
// as upstream's binder), annotates claims to provision with
// volume.kubernetes.io/selected-node, then waits, up to timeout, for the
// PV controller (or the provisioner) to bind every claim.
type apiVolumeBinder struct {
	client  kubernetes.Interface
	listers volumeListers
	timeout time.Duration
	// poll is how often the claim cache is checked while waiting.
	poll time.Duration
}

var _ core.VolumeBinder = apiVolumeBinder{}

func (b apiVolumeBinder) BindVolumes(ctx context.Context, pod *v1.Pod, node string, vb *plugins.VolumeBindings) error {
	for _, sb := range vb.Static {
		pv, _, err := volumehelpers.GetBindVolumeToClaim(sb.PV, sb.PVC)
		if err != nil {
			return err
		}
		// The cached volume's resourceVersion makes this a compare-and-swap:
		// a volume another pod took meanwhile fails it, and the pod is
		// scheduled again.
		if _, err := b.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding volume %s to claim %s/%s: %w", pv.Name, sb.PVC.Namespace, sb.PVC.Name, err)
		}
	}
	for _, pvc := range vb.Provision {
		clone := pvc.DeepCopy()
		metav1.SetMetaDataAnnotation(&clone.ObjectMeta, volumehelpers.AnnSelectedNode, node)
		if _, err := b.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("selecting node %s for claim %s/%s: %w", node, pvc.Namespace, pvc.Name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, b.poll, b.timeout, true, func(context.Context) (bool, error) {
		for _, pvc := range claimsOf(vb) {
			cur, err := b.listers.Claim(pvc.Namespace, pvc.Name)
			if err != nil {
				return false, err
			}
			if cur == nil || cur.UID != pvc.UID {
				return false, fmt.Errorf("claim %s/%s was deleted while binding", pvc.Namespace, pvc.Name)
			}
			if cur.Spec.VolumeName == "" || !metav1.HasAnnotation(cur.ObjectMeta, volumehelpers.AnnBindCompleted) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("binding volumes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

func claimsOf(vb *plugins.VolumeBindings) []*v1.PersistentVolumeClaim {
	out := make([]*v1.PersistentVolumeClaim, 0, len(vb.Static)+len(vb.Provision))
	for _, sb := range vb.Static {
		out = append(out, sb.PVC)
	}
	return append(out, vb.Provision...)
}

// volumeHandler moves unschedulable pods back when a claim, volume or
// class appears or changes: a pod waiting for its claim to be created or
// bound, or for a matching volume, may fit now. Clusters without claims
// see no such events, so pods without volumes pay nothing for it.
func volumeHandler(move func()) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { move() },
		UpdateFunc: func(any, any) { move() },
	}
}

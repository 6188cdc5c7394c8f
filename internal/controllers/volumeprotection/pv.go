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

	"github.com/myriad-k8s/myriad/internal/admission/storageprotection"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// PVName is the volume controller's name in --controllers (upstream's).
const PVName = "pv-protection"

// PVDescriptor registers the volume controller with the manager.
func PVDescriptor() controllerctx.Descriptor {
	return controllerctx.Describe(PVName, 1, NewPV)
}

// PVController removes kubernetes.io/pv-protection from volumes being
// deleted once they are not Bound.
type PVController struct {
	reconcile.Base
	volumes corelisters.PersistentVolumeLister
}

// NewPV watches volumes.
func NewPV(c *controllerctx.Context) (*PVController, error) {
	inf := c.Informers.Core().V1().PersistentVolumes()
	ctrl := &PVController{volumes: inf.Lister()}
	ctrl.Base = reconcile.NewBase(c, PVName, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{inf.Informer().HasSynced}
	if err := reconcile.Watch(inf.Informer(), reconcile.Adds|reconcile.Updates, ctrl.Enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", PVName, err)
	}
	return ctrl, nil
}

func (c *PVController) sync(ctx context.Context, name string) error {
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	has := slices.Contains(pv.Finalizers, storageprotection.PVFinalizer)
	var add bool
	switch {
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != corev1.VolumeBound:
		add = false
	case pv.DeletionTimestamp == nil && !has:
		add = true
	default:
		return nil
	}
	clone := pv.DeepCopy()
	clone.Finalizers = withFinalizer(clone.Finalizers, storageprotection.PVFinalizer, add)
	if _, err := c.Client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating finalizers of volume %s: %w", pv.Name, err)
	}
	c.Log.Info("updated protection finalizer", "volume", pv.Name, "added", add)
	return nil
}

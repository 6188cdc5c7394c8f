package pvbinder

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "persistentvolume-binder"

// resyncPeriod is upstream's default --pvclaimbinder-sync-period.
const resyncPeriod = 15 * time.Second

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller binds claims to volumes. One queue carries both: a claim's
// key is namespace/name, a volume's its bare name (volumes are
// cluster-scoped, so a key without "/" is a volume).
type Controller struct {
	reconcile.Base
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	classes  storagelisters.StorageClassLister
	pods     corelisters.PodLister
	recorder record.EventRecorder
	ticker   clock.WithTicker
}

// New registers handlers on the claim, volume and class informers and
// uses the pod informer for the WaitForPodScheduled event.
func New(c *controllerctx.Context) (*Controller, error) {
	pvcInf := c.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := c.Informers.Core().V1().PersistentVolumes()
	scInf := c.Informers.Storage().V1().StorageClasses()
	podInf := c.Informers.Core().V1().Pods()
	ctrl := &Controller{
		claims:   pvcInf.Lister(),
		volumes:  pvInf.Lister(),
		classes:  scInf.Lister(),
		pods:     podInf.Lister(),
		recorder: podcontrol.Recorder(c, "persistentvolume-controller"),
		ticker:   c.Clock,
	}
	if ctrl.ticker == nil {
		ctrl.ticker = clock.RealClock{}
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced, scInf.Informer().HasSynced, podInf.Informer().HasSynced}
	err := reconcile.AddHandlers(
		reconcile.Handler{Informer: pvcInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    ctrl.Enqueue,
			UpdateFunc: func(_, cur any) { ctrl.Enqueue(cur) },
			DeleteFunc: ctrl.claimDeleted,
		}},
		reconcile.Handler{Informer: pvInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    ctrl.volumeChanged,
			UpdateFunc: func(_, cur any) { ctrl.volumeChanged(cur) },
			DeleteFunc: ctrl.volumeDeleted,
		}},
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// Run works until ctx is done, resyncing everything every resyncPeriod.
func (c *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !cache.WaitForCacheSync(ctx.Done(), c.Synced...) {
			return
		}
		t := c.ticker.NewTicker(resyncPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				c.resync()
			}
		}
	}()
	c.Base.Run(ctx, workers)
}

// claimDeleted enqueues the volume a deleted claim was bound to, so it is
// released at once.
func (c *Controller) claimDeleted(obj any) {
	pvc, ok := reconcile.Object[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	if pvc.Spec.VolumeName != "" {
		c.Queue.Add(pvc.Spec.VolumeName)
	}
}

// volumeChanged enqueues the volume, its claim and, when the volume may
// now be matched, every unbound claim: upstream leaves those to the next
// resync, which only delays the same outcome.
func (c *Controller) volumeChanged(obj any) {
	pv, ok := reconcile.Object[*corev1.PersistentVolume](obj)
	if !ok {
		return
	}
	c.Queue.Add(pv.Name)
	if ref := pv.Spec.ClaimRef; ref != nil {
		c.Queue.Add(ref.Namespace + "/" + ref.Name)
	}
	if pv.Spec.ClaimRef == nil && pv.Status.Phase == corev1.VolumeAvailable {
		c.enqueueUnboundClaims()
	}
}

// volumeDeleted enqueues the claim bound to a deleted volume (it becomes
// Lost).
func (c *Controller) volumeDeleted(obj any) {
	pv, ok := reconcile.Object[*corev1.PersistentVolume](obj)
	if !ok || pv.Spec.ClaimRef == nil {
		return
	}
	c.Queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
}

func (c *Controller) enqueueUnboundClaims() {
	claims, err := c.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvc := range claims {
		if pvc.Spec.VolumeName == "" {
			c.Enqueue(pvc)
		}
	}
}

// resync enqueues every claim and volume, as upstream's periodic resync.
func (c *Controller) resync() {
	if claims, err := c.claims.List(labels.Everything()); err == nil {
		for _, pvc := range claims {
			c.Enqueue(pvc)
		}
	}
	if volumes, err := c.volumes.List(labels.Everything()); err == nil {
		for _, pv := range volumes {
			c.Queue.Add(pv.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return c.syncVolumeKey(ctx, key)
	}
	return c.syncClaimKey(ctx, ns, name)
}

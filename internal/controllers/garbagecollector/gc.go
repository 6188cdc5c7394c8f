package garbagecollector

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers.
const Name = "garbagecollector"

// Descriptor registers the controller with the manager (upstream's
// --concurrent-gc-syncs default of 20 workers).
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 20, New: func(c *controllerctx.Context) (controllerctx.Controller, error) { return New(c) }}
}

// rediscoverEvery is how often new resources (CRDs, aggregated APIs) are
// picked up: in seconds, so a custom resource created just after its CRD
// is collected like any other (upstream waits for its 30 s resync). A
// rediscovery is two aggregated-discovery reads.
const rediscoverEvery = 3 * time.Second

// item identifies one object; the UID guards against acting on a newer
// object of the same name.
type item struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	uid       types.UID
}

// String names the item in logs.
func (it item) String() string {
	return it.gvr.String() + " " + it.namespace + "/" + it.name + " " + string(it.uid)
}

func itemFor(gvr schema.GroupVersionResource, m *metav1.ObjectMeta) item {
	return item{gvr: gvr, namespace: m.Namespace, name: m.Name, uid: m.UID}
}

// Controller is the garbage collector.
type Controller struct {
	client            kubernetes.Interface
	metadata          metadata.Interface
	metadataInformers metadatainformer.SharedInformerFactory
	// typedInformers serve typedResources (typed.go).
	typedInformers informers.SharedInformerFactory
	monitors       *monitors
	clock          clock.WithTicker
	log            *slog.Logger

	// attemptToDelete holds objects whose owners may be gone and owners
	// deleting their dependents in the foreground; attemptToOrphan holds
	// owners with the orphan finalizer.
	attemptToDelete *reconcile.Loop[item]
	attemptToOrphan *reconcile.Loop[item]

	warmOnce sync.Once
	// warmed is closed once the first discovery has set up the monitors.
	warmed chan struct{}

	// unknown holds dependents whose owners are of kinds not monitored
	// yet (monitors.go).
	unknown unknownOwners
}

// New builds the collector; its informers are set up by Warm, which needs
// discovery.
func New(c *controllerctx.Context) (*Controller, error) {
	gc := &Controller{
		client:            c.Client,
		metadata:          c.Metadata,
		metadataInformers: c.MetadataInformers,
		typedInformers:    c.Informers,
		monitors:          newMonitors(),
		clock:             c.Clock,
		log:               c.Logger.With("controller", Name),
		warmed:            make(chan struct{}),
	}
	// Upstream's queue names. Items are retried until they succeed: a
	// dropped one would leave garbage until its owner changes again.
	opts := reconcile.Options[item]{MaxRetries: -1}
	gc.attemptToDelete = reconcile.NewLoop(c, "garbage_collector_attempt_to_delete", gc.processDelete, opts)
	gc.attemptToOrphan = reconcile.NewLoop(c, "garbage_collector_attempt_to_orphan", gc.processOrphan, opts)
	return gc, nil
}

// Warm discovers the resources and starts their metadata informers, then
// rediscovers periodically until ctx is done (see controllers.Warmer).
func (gc *Controller) Warm(ctx context.Context) {
	gc.warmOnce.Do(func() {
		go func() {
			for {
				err := gc.syncMonitors(ctx)
				if len(gc.monitors.all()) > 0 {
					break
				}
				gc.log.Info("discovery failed; retrying", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-gc.clock.After(time.Second):
				}
			}
			close(gc.warmed)
			t := gc.clock.NewTicker(rediscoverEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
					if err := gc.syncMonitors(ctx); err != nil {
						gc.log.Debug("rediscovery", "err", err)
					}
				}
			}
		}()
	})
}

// Run waits for the monitors to sync and works until ctx is done.
func (gc *Controller) Run(ctx context.Context, workers int) {
	defer gc.attemptToDelete.ShutDown()
	defer gc.attemptToOrphan.ShutDown()
	gc.Warm(ctx) // no-op when the manager warmed us as a standby
	select {
	case <-ctx.Done():
		return
	case <-gc.warmed:
	}
	if !cache.WaitForCacheSync(ctx.Done(), gc.monitors.synced) {
		return
	}
	gc.log.Info("garbage collector synced", "resources", len(gc.monitors.all()))
	var wg sync.WaitGroup
	wg.Go(func() { gc.attemptToDelete.Run(ctx, workers) })
	wg.Go(func() { gc.attemptToOrphan.Run(ctx, 1) })
	wg.Wait()
}

// handlers turn one monitor's events into work.
func (gc *Controller) handlers(mon *monitor) cache.ResourceEventHandler {
	gvr := mon.res.GVR
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			m, ok := objectMeta(obj)
			if !ok {
				return
			}
			if len(m.OwnerReferences) > 0 {
				gc.attemptToDelete.Add(itemFor(gvr, m))
			}
			gc.ownerChanged(gvr, m)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := objectMeta(oldObj)
			m, ok2 := objectMeta(newObj)
			if !ok1 || !ok2 {
				return
			}
			if len(m.OwnerReferences) > 0 && !slices.EqualFunc(o.OwnerReferences, m.OwnerReferences, sameRef) {
				gc.attemptToDelete.Add(itemFor(gvr, m))
			}
			if (o.DeletionTimestamp == nil) != (m.DeletionTimestamp == nil) || !slices.Equal(o.Finalizers, m.Finalizers) {
				gc.ownerChanged(gvr, m)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			m, ok := objectMeta(obj)
			if !ok {
				return
			}
			// Its dependents may now be garbage; its owners may be
			// waiting for it (foreground deletion).
			for _, d := range gc.dependents(string(m.UID)) {
				gc.attemptToDelete.Add(d)
			}
			for _, ref := range m.OwnerReferences {
				if mon := gc.monitors.forKind(refGroupKind(ref)); mon != nil {
					ns := ""
					if mon.res.Namespaced {
						ns = m.Namespace
					}
					gc.attemptToDelete.Add(item{gvr: mon.res.GVR, namespace: ns, name: ref.Name, uid: ref.UID})
				}
			}
		},
	}
}

// ownerChanged queues an object being deleted with a propagation finalizer.
func (gc *Controller) ownerChanged(gvr schema.GroupVersionResource, m *metav1.ObjectMeta) {
	if m.DeletionTimestamp == nil {
		return
	}
	if slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) {
		gc.attemptToDelete.Add(itemFor(gvr, m))
	}
	if slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents) {
		gc.attemptToOrphan.Add(itemFor(gvr, m))
	}
}

func sameRef(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && ptrEq(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

func ptrEq(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func refGroupKind(ref metav1.OwnerReference) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
}

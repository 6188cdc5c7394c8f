package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/queuemetrics"
)

// Name is the controller's name in --controllers.
const Name = "serviceaccount"

// DefaultName is the ServiceAccount every namespace gets.
const DefaultName = "default"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 2, New: func(c *controllerctx.Context) (controllerctx.Controller, error) { return New(c) }}
}

// Controller ensures the default ServiceAccount per namespace.
type Controller struct {
	client     kubernetes.Interface
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
	synced     []cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	log        *slog.Logger
}

// New registers handlers on the namespace and ServiceAccount informers.
func New(c *controllerctx.Context) (*Controller, error) {
	nsInf := c.Informers.Core().V1().Namespaces()
	saInf := c.Informers.Core().V1().ServiceAccounts()
	ctrl := &Controller{
		client:     c.Client,
		namespaces: nsInf.Lister(),
		accounts:   saInf.Lister(),
		synced:     []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: Name, Clock: c.Clock, MetricsProvider: queuemetrics.Provider(c.Metrics)}),
		log: c.Logger.With("controller", Name),
	}
	enqueueNS := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			ctrl.queue.Add(ns.Name)
		}
	}
	if _, err := nsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNS,
		UpdateFunc: func(_, obj any) { enqueueNS(obj) },
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if _, err := saInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
				ctrl.queue.Add(sa.Namespace)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil {
		c.log.Debug("sync failed; retrying", "namespace", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *Controller) sync(ctx context.Context, ns string) error {
	n, err := c.namespaces.Get(ns)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.Status.Phase != corev1.NamespaceActive || n.DeletionTimestamp != nil {
		return nil
	}
	if _, err := c.accounts.ServiceAccounts(ns).Get(DefaultName); err == nil {
		return nil
	}
	_, err = c.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName}}, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("creating %s/%s: %w", ns, DefaultName, err)
	}
}

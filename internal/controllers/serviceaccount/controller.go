package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers.
const Name = "serviceaccount"

// DefaultName is the ServiceAccount every namespace gets.
const DefaultName = "default"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 2, New)
}

// Controller ensures the default ServiceAccount per namespace.
type Controller struct {
	reconcile.Base
	namespaces corelisters.NamespaceLister
	accounts   corelisters.ServiceAccountLister
}

// New registers handlers on the namespace and ServiceAccount informers.
func New(c *controllerctx.Context) (*Controller, error) {
	nsInf := c.Informers.Core().V1().Namespaces()
	saInf := c.Informers.Core().V1().ServiceAccounts()
	ctrl := &Controller{
		namespaces: nsInf.Lister(),
		accounts:   saInf.Lister(),
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{nsInf.Informer().HasSynced, saInf.Informer().HasSynced}
	if err := reconcile.Watch(nsInf.Informer(), reconcile.Adds|reconcile.Updates, reconcile.EnqueueKey(ctrl.Queue)); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := reconcile.Watch(saInf.Informer(), reconcile.Deletes, func(obj any) {
		if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
			ctrl.Queue.Add(sa.Namespace)
		}
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
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
	_, err = c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName}}, metav1.CreateOptions{})
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("creating %s/%s: %w", ns, DefaultName, err)
	}
}

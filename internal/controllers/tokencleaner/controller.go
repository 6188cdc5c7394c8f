package tokencleaner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "tokencleaner"

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller is the token cleaner.
type Controller struct {
	reconcile.Base
	// secrets holds only kube-system's bootstrap token Secrets: an
	// informer of its own, not the shared one over every Secret.
	secrets cache.SharedIndexInformer
	lister  corelisters.SecretLister
}

// TokenSecrets is an informer over kube-system's bootstrap token Secrets,
// as both bootstrap controllers watch them.
func TokenSecrets(c *controllerctx.Context) cache.SharedIndexInformer {
	lw := cache.NewFilteredListWatchFromClient(c.ReadClient().CoreV1().RESTClient(), "secrets", metav1.NamespaceSystem,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken)).String()
		})
	return cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// New registers handlers on its own Secret informer (started by Warm).
func New(c *controllerctx.Context) (*Controller, error) {
	return newWith(c, TokenSecrets(c))
}

func newWith(c *controllerctx.Context, inf cache.SharedIndexInformer) (*Controller, error) {
	ctrl := &Controller{secrets: inf, lister: corelisters.NewSecretLister(inf.GetIndexer())}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{inf.HasSynced}
	if err := reconcile.Watch(inf, reconcile.Adds|reconcile.Updates, ctrl.Enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// Warm starts the controller's Secret informer (see controllers.Warmer).
func (c *Controller) Warm(ctx context.Context) {
	go c.secrets.RunWithContext(ctx)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	secret, err := c.lister.Secrets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if secret.Type != bootstrapapi.SecretTypeBootstrapToken || secret.DeletionTimestamp != nil {
		return nil
	}
	ttl, expired := bootstrapsecretutil.GetExpiration(secret, c.Clock.Now())
	if !expired {
		if ttl > 0 {
			return reconcile.RequeueAfter(ttl)
		}
		return nil
	}
	err = c.Client.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &secret.UID}})
	switch {
	case err == nil:
		c.Log.Info("deleted expired bootstrap token", "secret", key)
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		return fmt.Errorf("deleting expired bootstrap token %s: %w", key, err)
	}
	return nil
}

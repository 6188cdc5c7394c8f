package serviceaccounttoken

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "serviceaccount-token"

// Options configure the controller.
type Options struct {
	// KeyFile is the PEM private key legacy tokens are signed with: the
	// API server's ServiceAccount signing key. Required.
	KeyFile string
	// RootCA is put in each Secret as ca.crt (may be empty).
	RootCA []byte
}

// Descriptor registers the controller with the manager, which rebuilds
// New with the configured key.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 1, New: func(c *controllerctx.Context) (controllerctx.Controller, error) { return New(c, Options{}) }}
}

// Controller keeps ServiceAccount token Secrets filled. Its queue holds
// ServiceAccount keys (namespace/name): everything it does is about one
// account's token Secrets.
type Controller struct {
	reconcile.Base
	signer   *serviceaccount.Signer
	rootCA   []byte
	accounts corelisters.ServiceAccountLister
	// secrets holds only Secrets of type kubernetes.io/service-account-
	// token: a field-selected informer of its own, not the shared one
	// over every Secret.
	secrets cache.SharedIndexInformer
	byIndex cache.Indexer
}

// accountIndex indexes token Secrets by the namespace/name of their
// ServiceAccount.
const accountIndex = "serviceaccount"

// New loads the key and registers handlers.
func New(c *controllerctx.Context, opts Options) (*Controller, error) {
	if opts.KeyFile == "" {
		return nil, errors.New("serviceaccounttoken: the signing key file is required")
	}
	lw := cache.NewFilteredListWatchFromClient(c.Client.CoreV1().RESTClient(), "secrets", metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
	})
	inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
	return newWith(c, opts, inf)
}

func newWith(c *controllerctx.Context, opts Options, secrets cache.SharedIndexInformer) (*Controller, error) {
	key, err := pki.LoadPrivateKey(opts.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	signer, err := serviceaccount.NewSigner(serviceaccount.LegacyIssuer, key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := reconcile.AddIndexers(secrets, cache.Indexers{accountIndex: func(obj any) ([]string, error) {
		s, ok := obj.(*corev1.Secret)
		if !ok || s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] == "" {
			return nil, nil
		}
		return []string{s.Namespace + "/" + s.Annotations[corev1.ServiceAccountNameKey]}, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	saInf := c.Informers.Core().V1().ServiceAccounts()
	ctrl := &Controller{
		signer: signer, rootCA: opts.RootCA,
		accounts: saInf.Lister(), secrets: secrets, byIndex: secrets.GetIndexer(),
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{saInf.Informer().HasSynced, secrets.HasSynced}
	if err := reconcile.Watch(saInf.Informer(), reconcile.Adds|reconcile.Deletes, ctrl.Enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := reconcile.Watch(secrets, reconcile.Adds|reconcile.Updates, ctrl.enqueueSecret); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// Warm starts the controller's own Secret informer (see controllers.Warmer).
func (c *Controller) Warm(ctx context.Context) {
	go c.secrets.RunWithContext(ctx)
}

func (c *Controller) enqueueSecret(obj any) {
	s, ok := reconcile.Object[*corev1.Secret](obj)
	if !ok || s.Type != corev1.SecretTypeServiceAccountToken {
		return
	}
	if name := s.Annotations[corev1.ServiceAccountNameKey]; name != "" {
		c.Queue.Add(s.Namespace + "/" + name)
	}
}

// sync fills or deletes the token Secrets of ServiceAccount key.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	objs, err := c.byIndex.ByIndex(accountIndex, key)
	if err != nil {
		return err
	}
	if len(objs) == 0 {
		return nil
	}
	sa, err := c.account(ctx, ns, name)
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range objs {
		secret := obj.(*corev1.Secret)
		uid := secret.Annotations[corev1.ServiceAccountUIDKey]
		if sa == nil || (uid != "" && uid != string(sa.UID)) {
			// The account is gone, or this Secret was made for an
			// earlier account of the same name.
			errs = append(errs, c.delete(ctx, secret))
			continue
		}
		errs = append(errs, c.fill(ctx, sa, secret))
	}
	return errors.Join(errs...)
}

// account reads the ServiceAccount, from the API when the cache does not
// have it: a Secret created right after its account must not be deleted
// because the informer is a moment behind. nil means it does not exist.
func (c *Controller) account(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	sa, err := c.accounts.ServiceAccounts(ns).Get(name)
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	sa, err = c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return sa, err
}

func (c *Controller) delete(ctx context.Context, s *corev1.Secret) error {
	uid := s.UID
	err := c.Client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting token secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

// needsUpdate reports whether s lacks its token, namespace, CA or uid.
func (c *Controller) needsUpdate(sa *corev1.ServiceAccount, s *corev1.Secret) bool {
	return len(s.Data[corev1.ServiceAccountTokenKey]) == 0 ||
		len(s.Data[corev1.ServiceAccountNamespaceKey]) == 0 ||
		(len(c.rootCA) > 0 && !bytes.Equal(s.Data[corev1.ServiceAccountRootCAKey], c.rootCA)) ||
		s.Annotations[corev1.ServiceAccountUIDKey] != string(sa.UID)
}

// fill writes what s lacks, to the Secret as the API has it now (the
// cache's copy may be stale and must not be modified).
func (c *Controller) fill(ctx context.Context, sa *corev1.ServiceAccount, cached *corev1.Secret) error {
	if !c.needsUpdate(sa, cached) {
		return nil
	}
	live, err := c.Client.CoreV1().Secrets(cached.Namespace).Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if live.UID != cached.UID || !c.needsUpdate(sa, live) {
		return nil
	}
	s := live.DeepCopy()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if len(c.rootCA) > 0 {
		s.Data[corev1.ServiceAccountRootCAKey] = c.rootCA
	}
	if len(s.Data[corev1.ServiceAccountNamespaceKey]) == 0 {
		s.Data[corev1.ServiceAccountNamespaceKey] = []byte(s.Namespace)
	}
	if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
		token, err := c.signer.SignLegacy(sa, s)
		if err != nil {
			return err
		}
		s.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1.ServiceAccountNameKey] = sa.Name
	s.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	if _, err := c.Client.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsConflict(err) {
			return reconcile.ErrRequeue
		}
		return fmt.Errorf("filling token secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}

package rootcacert

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "root-ca-cert-publisher"

const (
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// DataKey holds the PEM bundle.
	DataKey = "ca.crt"

	descriptionAnnotation = "kubernetes.io/description"
	description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Descriptor registers the controller with the manager. The manager
// rebuilds New with the CA of its client configuration.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 1, New: func(c *controllerctx.Context) (controllerctx.Controller, error) { return New(c, nil) }}
}

// Controller publishes the root CA ConfigMap.
type Controller struct {
	reconcile.Base
	ca         string
	namespaces corelisters.NamespaceLister
	// configMaps holds only ConfigMaps named kube-root-ca.crt: a field
	// selected informer of its own, not the shared one over all ConfigMaps.
	configMaps cache.SharedIndexInformer
	cmLister   corelisters.ConfigMapLister
}

// New registers handlers; ca is the PEM bundle to publish.
func New(c *controllerctx.Context, ca []byte) (*Controller, error) {
	if len(ca) == 0 {
		return nil, errors.New("rootcacert: no CA bundle to publish")
	}
	nsInf := c.Informers.Core().V1().Namespaces()
	lw := cache.NewFilteredListWatchFromClient(c.ReadClient().CoreV1().RESTClient(), "configmaps", metav1.NamespaceAll,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ConfigMapName).String()
		})
	cmInf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return newWith(c, ca, nsInf.Informer(), nsInf.Lister(), cmInf)
}

func newWith(c *controllerctx.Context, ca []byte, nsInf cache.SharedIndexInformer, nsLister corelisters.NamespaceLister, cmInf cache.SharedIndexInformer) (*Controller, error) {
	ctrl := &Controller{
		ca:         string(ca),
		namespaces: nsLister,
		configMaps: cmInf,
		cmLister:   corelisters.NewConfigMapLister(cmInf.GetIndexer()),
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{nsInf.HasSynced, cmInf.HasSynced}
	if err := reconcile.Watch(nsInf, reconcile.Adds|reconcile.Updates, ctrl.enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := reconcile.Watch(cmInf, reconcile.Updates|reconcile.Deletes, ctrl.enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// enqueue queues the namespace of a namespace or of its ConfigMap.
func (c *Controller) enqueue(obj any) {
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.Queue.Add(o.Name)
	case *corev1.ConfigMap:
		c.Queue.Add(o.Namespace)
	}
}

// Warm starts the controller's own ConfigMap informer (see controllers.Warmer).
func (c *Controller) Warm(ctx context.Context) {
	go c.configMaps.RunWithContext(ctx)
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
	cm, err := c.cmLister.ConfigMaps(ns).Get(ConfigMapName)
	if apierrors.IsNotFound(err) {
		_, err = c.Client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{descriptionAnnotation: description}},
			Data:       map[string]string{DataKey: c.ca},
		}, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return fmt.Errorf("creating %s/%s: %w", ns, ConfigMapName, err)
	}
	if err != nil {
		return err
	}
	if cm.Data[DataKey] == c.ca && len(cm.Data) == 1 && cm.Annotations[descriptionAnnotation] == description {
		return nil
	}
	cm = cm.DeepCopy()
	cm.Data = map[string]string{DataKey: c.ca}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[descriptionAnnotation] = description
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating %s/%s: %w", ns, ConfigMapName, err)
	}
	return nil
}

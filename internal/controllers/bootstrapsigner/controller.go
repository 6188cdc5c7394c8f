package bootstrapsigner

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecretutil "k8s.io/cluster-bootstrap/util/secrets"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
	"github.com/myriad-k8s/myriad/internal/controllers/tokencleaner"
)

// Name is the controller's name in --controllers (upstream's).
const Name = "bootstrapsigner"

// key is the one work item: every event leads to re-signing cluster-info.
const key = metav1.NamespacePublic + "/" + bootstrapapi.ConfigMapClusterInfo

// Descriptor registers the controller with the manager.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 1, New)
}

// Controller is the bootstrap signer.
type Controller struct {
	reconcile.Base
	secrets, configMaps cache.SharedIndexInformer
	secretLister        corelisters.SecretLister
	cmLister            corelisters.ConfigMapLister
}

// New registers handlers on its own informers (started by Warm): the
// bootstrap token Secrets and the cluster-info ConfigMap.
func New(c *controllerctx.Context) (*Controller, error) {
	lw := cache.NewFilteredListWatchFromClient(c.ReadClient().CoreV1().RESTClient(), "configmaps", metav1.NamespacePublic,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", bootstrapapi.ConfigMapClusterInfo).String()
		})
	cms := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	return newWith(c, tokencleaner.TokenSecrets(c), cms)
}

func newWith(c *controllerctx.Context, secrets, configMaps cache.SharedIndexInformer) (*Controller, error) {
	ctrl := &Controller{
		secrets: secrets, configMaps: configMaps,
		secretLister: corelisters.NewSecretLister(secrets.GetIndexer()),
		cmLister:     corelisters.NewConfigMapLister(configMaps.GetIndexer()),
	}
	ctrl.Base = reconcile.NewBase(c, Name, ctrl.sync, reconcile.Options[string]{})
	ctrl.Synced = []cache.InformerSynced{secrets.HasSynced, configMaps.HasSynced}
	enqueue := func(any) { ctrl.Queue.Add(key) }
	if err := reconcile.Watch(secrets, reconcile.All, enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := reconcile.Watch(configMaps, reconcile.Adds|reconcile.Updates, enqueue); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return ctrl, nil
}

// Warm starts the controller's informers (see controllers.Warmer).
func (c *Controller) Warm(ctx context.Context) {
	go c.secrets.RunWithContext(ctx)
	go c.configMaps.RunWithContext(ctx)
}

func (c *Controller) sync(ctx context.Context, _ string) error {
	cm, err := c.cmLister.ConfigMaps(metav1.NamespacePublic).Get(bootstrapapi.ConfigMapClusterInfo)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	content, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		return nil
	}
	tokens, next, err := c.signingTokens()
	if err != nil {
		return err
	}
	want := map[string]string{}
	for id, secret := range tokens {
		sig, err := jws.ComputeDetachedSignature(content, id, secret)
		if err != nil {
			return fmt.Errorf("signing cluster-info for token %s: %w", id, err)
		}
		want[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
	}
	have := map[string]string{}
	for k, v := range cm.Data {
		if strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			have[k] = v
		}
	}
	if !maps.Equal(have, want) {
		cm = cm.DeepCopy()
		maps.DeleteFunc(cm.Data, func(k, _ string) bool { return strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) })
		maps.Copy(cm.Data, want)
		if _, err := c.Client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("updating cluster-info: %w", err)
		}
	}
	if next > 0 {
		// A signature must go when its token expires, whether or not
		// the token cleaner deletes the Secret.
		return reconcile.RequeueAfter(next)
	}
	return nil
}

// signingTokens are the id → secret of the tokens to sign with, as
// upstream's validateSecretForSigning, and the time until the first of
// them expires (0: none expires).
func (c *Controller) signingTokens() (map[string]string, time.Duration, error) {
	secrets, err := c.secretLister.Secrets(metav1.NamespaceSystem).List(labels.Everything())
	if err != nil {
		return nil, 0, err
	}
	now := c.Clock.Now()
	out := map[string]string{}
	var next time.Duration
	for _, s := range secrets {
		id, ok := bootstrapsecretutil.ParseName(s.Name)
		if !ok || s.Type != bootstrapapi.SecretTypeBootstrapToken || s.DeletionTimestamp != nil ||
			bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenIDKey) != id ||
			bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenUsageSigningKey) != "true" {
			continue
		}
		secret := bootstrapsecretutil.GetData(s, bootstrapapi.BootstrapTokenSecretKey)
		if secret == "" {
			continue
		}
		ttl, expired := bootstrapsecretutil.GetExpiration(s, now)
		if expired {
			continue
		}
		if ttl > 0 && (next == 0 || ttl < next) {
			next = ttl
		}
		out[id] = secret
	}
	return out, next, nil
}

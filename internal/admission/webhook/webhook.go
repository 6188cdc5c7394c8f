package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/component-base/featuregate"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/upstream"
)

// Config is what the plugins need from the API server.
type Config struct {
	// Informers feed the webhook configurations and namespaces (see
	// upstream.InformerFactory). The caller starts them. Required.
	Informers informers.SharedInformerFactory
	// Client reads what the informers have not seen yet (a namespace
	// created a moment ago) and the services and endpoint slices service
	// references resolve through. Required.
	Client kubernetes.Interface
	// Objects are the object interfaces over the server's scheme
	// (upstream.ObjectInterfaces). Required.
	Objects apiadmission.ObjectInterfaces
	// Authorizer answers matchConditions' `authorizer`. Required.
	Authorizer authorizer.UnconditionalAuthorizer
	// Stop ends the plugins' background work (server shutdown). Required.
	Stop <-chan struct{}
	// Excluded are resources no webhook may intercept (the reviews,
	// which nothing stores).
	Excluded []schema.GroupResource
}

// Plugins are the two webhook plugins, ready for the chain.
type Plugins struct {
	Mutating   *upstream.Mutating
	Validating *upstream.Validating
	ready      []func() bool
}

// Ready reports whether both plugins have their configurations (the
// informers synced): before that upstream's plugins wait for them on a
// request, up to ten seconds.
func (p *Plugins) Ready() bool {
	for _, r := range p.ready {
		if !r() {
			return false
		}
	}
	return true
}

// New builds both plugins.
func New(cfg Config) (*Plugins, error) {
	if cfg.Informers == nil || cfg.Client == nil || cfg.Objects == nil || cfg.Authorizer == nil || cfg.Stop == nil {
		return nil, errors.New("webhook: Informers, Client, Objects, Authorizer and Stop are required")
	}
	m, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("mutating admission webhook: %w", err)
	}
	v, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("validating admission webhook: %w", err)
	}
	resolver := &serviceResolver{client: cfg.Client}
	m.SetServiceResolver(resolver)
	v.SetServiceResolver(resolver)
	p := &Plugins{}
	for _, w := range []initializable{m, v} {
		w.InspectFeatureGates(utilfeature.DefaultFeatureGate)
		w.SetDrainedNotification(cfg.Stop)
		w.SetExternalKubeClientSet(cfg.Client)
		w.SetExternalKubeInformerFactory(cfg.Informers)
		w.SetUnconditionalAuthorizer(cfg.Authorizer)
		w.SetExcludedAdmissionResources(cfg.Excluded)
		if err := w.ValidateInitialization(); err != nil {
			return nil, fmt.Errorf("admission webhook: %w", err)
		}
	}
	arv1 := cfg.Informers.Admissionregistration().V1()
	p.ready = []func() bool{
		cfg.Informers.Core().V1().Namespaces().Informer().HasSynced,
		arv1.MutatingWebhookConfigurations().Informer().HasSynced,
		arv1.ValidatingWebhookConfigurations().Informer().HasSynced,
	}
	mc, vc := &upstream.Configured{}, &upstream.Configured{}
	if err := mc.Watch(arv1.MutatingWebhookConfigurations().Informer()); err != nil {
		return nil, err
	}
	if err := vc.Watch(arv1.ValidatingWebhookConfigurations().Informer()); err != nil {
		return nil, err
	}
	p.Mutating = &upstream.Mutating{Plugin: m, Objects: cfg.Objects, Configured: mc}
	p.Validating = &upstream.Validating{Plugin: v, Objects: cfg.Objects, Configured: vc}
	return p, nil
}

// initializable is what New calls on both plugins: the setters upstream's
// plugin initializers would.
type initializable interface {
	InspectFeatureGates(featuregate.FeatureGate)
	SetDrainedNotification(<-chan struct{})
	SetExternalKubeClientSet(kubernetes.Interface)
	SetExternalKubeInformerFactory(informers.SharedInformerFactory)
	SetUnconditionalAuthorizer(authorizer.UnconditionalAuthorizer)
	SetExcludedAdmissionResources([]schema.GroupResource)
	ValidateInitialization() error
}

// serviceResolver resolves a webhook's service reference to one of the
// service's ready endpoints (upstream's proxy.ResolveEndpoint, as
// --enable-aggregator-routing does), reading through the in-process
// client at the cache's current state.
type serviceResolver struct{ client kubernetes.Interface }

// resolveTimeout bounds the reads of one resolution; they are in-process
// cache reads, so this only guards against a wedged cache.
const resolveTimeout = 5 * time.Second

func (r *serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	return proxy.ResolveEndpoint(serviceGetter{ctx, r.client}, sliceGetter{ctx, r.client}, namespace, name, port)
}

// serviceGetter is the one ServiceLister method ResolveEndpoint calls.
type serviceGetter struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (g serviceGetter) List(labels.Selector) ([]*corev1.Service, error) {
	return nil, errors.New("webhook: listing services is not supported")
}

func (g serviceGetter) Services(ns string) corelisters.ServiceNamespaceLister {
	return serviceNamespaceGetter{g, ns}
}

type serviceNamespaceGetter struct {
	serviceGetter
	ns string
}

func (g serviceNamespaceGetter) Get(name string) (*corev1.Service, error) {
	return g.client.CoreV1().Services(g.ns).Get(g.ctx, name, metav1.GetOptions{ResourceVersion: "0"})
}

type sliceGetter struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (g sliceGetter) GetEndpointSlices(ns, service string) ([]*discoveryv1.EndpointSlice, error) {
	l, err := g.client.DiscoveryV1().EndpointSlices(ns).List(g.ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + service, ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

var _ admission.MutationInterface = (*upstream.Mutating)(nil)

package aggregator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	discoveryv1informers "k8s.io/client-go/informers/discovery/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoveryv1listers "k8s.io/client-go/listers/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// Objects writes through the API server's own write path
// (apiserver.Server.Objects()).
type Objects interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error)
	Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Update(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, obj runtime.Object) error
}

// Config configures an Aggregator. Zero values take the stated defaults.
type Config struct {
	// ListerWatcher feeds the informers over APIServices, Services and
	// EndpointSlices (apiserver.Server.ListerWatcher). Required.
	ListerWatcher func(schema.GroupVersionResource) (toolscache.ListerWatcher, error)
	// Objects writes APIServices and the authentication ConfigMap. Required.
	Objects Objects
	// LocalGroupVersions are the group versions the server serves itself;
	// each gets a Local APIService at Start.
	LocalGroupVersions []schema.GroupVersion
	// ProxyClientCertPEM and ProxyClientKeyPEM are the front-proxy client
	// certificate presented to extension servers (pki.FrontProxy). Without
	// them the proxy presents none and extension servers see anonymous
	// requests.
	ProxyClientCertPEM, ProxyClientKeyPEM []byte
	// Authentication is what the extension-apiserver-authentication
	// ConfigMap publishes; nil: no ConfigMap is written.
	Authentication *AuthenticationInfo
	// CheckInterval is how often every remote APIService is checked and
	// its discovery refetched besides on changes (default 30 s, upstream's
	// resync).
	CheckInterval time.Duration
	// CheckTimeout bounds one discovery check (default 5 s, as upstream).
	CheckTimeout time.Duration
	Logger       *slog.Logger
	// Metrics receives aggregator_unavailable_apiservice and
	// aggregator_unavailable_apiservice_total; nil: not exported.
	Metrics prometheus.Registerer
}

// Aggregator serves aggregated APIs in front of the API server; see the
// package doc. Handler is safe for concurrent use; Start and Stop are
// called once each.
type Aggregator struct {
	cfg Config
	log *slog.Logger

	apiServices, services, slices toolscache.SharedIndexInformer
	apiServiceLister              apiServiceLister
	serviceLister                 corev1listers.ServiceLister
	sliceGetter                   apiserverproxy.EndpointSliceGetter

	// routes is rebuilt from the APIService informer on every change and
	// read lock-free by every request; rebuilding holds rebuildMu.
	routes    atomic.Pointer[routeTable]
	rebuildMu sync.Mutex
	// discovery holds what each remote group version's server advertises.
	discovery discoveryCache
	// kick asks the availability loop for a check now.
	kick    chan struct{}
	metrics *metrics

	// mu guards the local registrations made after Start.
	mu struct {
		sync.Mutex
		local map[schema.GroupVersion]localRegistration
	}

	stop chan struct{}
	wg   sync.WaitGroup
}

var (
	apiServicesGVR    = apiregistrationv1.SchemeGroupVersion.WithResource("apiservices")
	servicesGVR       = corev1.SchemeGroupVersion.WithResource("services")
	endpointSlicesGVR = discoveryv1.SchemeGroupVersion.WithResource("endpointslices")
	configMapsGVR     = corev1.SchemeGroupVersion.WithResource("configmaps")
)

// New builds an Aggregator and its informers; they run from Start.
func New(cfg Config) (*Aggregator, error) {
	if cfg.ListerWatcher == nil || cfg.Objects == nil {
		return nil, errors.New("aggregator: ListerWatcher and Objects are required")
	}
	if cfg.CheckInterval <= 0 {
		cfg.CheckInterval = 30 * time.Second
	}
	if cfg.CheckTimeout <= 0 {
		cfg.CheckTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if (len(cfg.ProxyClientCertPEM) == 0) != (len(cfg.ProxyClientKeyPEM) == 0) {
		return nil, errors.New("aggregator: a proxy client certificate needs its key")
	}
	if len(cfg.ProxyClientCertPEM) > 0 {
		if _, err := tls.X509KeyPair(cfg.ProxyClientCertPEM, cfg.ProxyClientKeyPEM); err != nil {
			return nil, fmt.Errorf("aggregator: proxy client certificate: %w", err)
		}
	}
	a := &Aggregator{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	a.mu.local = map[schema.GroupVersion]localRegistration{}
	var err error
	if a.metrics, err = newMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	informer := func(gvr schema.GroupVersionResource, obj runtime.Object, idx toolscache.Indexers) (toolscache.SharedIndexInformer, error) {
		lw, err := cfg.ListerWatcher(gvr)
		if err != nil {
			return nil, fmt.Errorf("aggregator: %w", err)
		}
		return toolscache.NewSharedIndexInformer(lw, obj, 0, idx), nil
	}
	if a.apiServices, err = informer(apiServicesGVR, &apiregistrationv1.APIService{}, toolscache.Indexers{}); err != nil {
		return nil, err
	}
	if a.services, err = informer(servicesGVR, &corev1.Service{}, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}); err != nil {
		return nil, err
	}
	if a.slices, err = informer(endpointSlicesGVR, &discoveryv1.EndpointSlice{}, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc}); err != nil {
		return nil, err
	}
	if err := errors.Join(a.services.SetTransform(serviceTransform), a.slices.SetTransform(endpointSliceTransform)); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	a.apiServiceLister = apiServiceLister{a.apiServices.GetIndexer()}
	a.serviceLister = corev1listers.NewServiceLister(a.services.GetIndexer())
	// Upstream's getter indexes slices by Service, so resolving a Service
	// costs its own slices, not every slice in the namespace.
	if a.sliceGetter, err = apiserverproxy.NewEndpointSliceIndexerGetter(sliceInformer{a.slices}); err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	a.routes.Store(&routeTable{})
	// Any APIService change rebuilds the routes and checks; a Service or
	// EndpointSlice change checks only when an APIService names its
	// Service: in a large cluster endpoints churn all the time.
	apiServiceChanged := func() {
		a.rebuildRoutes()
		a.checkSoon()
	}
	handlers := map[toolscache.SharedIndexInformer]func(any){
		a.apiServices: func(any) { apiServiceChanged() },
		a.services: func(obj any) {
			if m, ok := objectMeta(obj); ok && a.routes.Load().services[m.GetNamespace()+"/"+m.GetName()] {
				a.checkSoon()
			}
		},
		a.slices: func(obj any) {
			if m, ok := objectMeta(obj); ok && a.routes.Load().services[m.GetNamespace()+"/"+m.GetLabels()[discoveryv1.LabelServiceName]] {
				a.checkSoon()
			}
		},
	}
	for inf, fn := range handlers {
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    fn,
			UpdateFunc: func(_, obj any) { fn(obj) },
			DeleteFunc: fn,
		}); err != nil {
			return nil, fmt.Errorf("aggregator: %w", err)
		}
	}
	return a, nil
}

// objectMeta is obj's metadata, tombstones included.
func objectMeta(obj any) (metav1.Object, bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	return m, err == nil
}

// sliceInformer is the EndpointSliceInformer upstream's getter wants.
type sliceInformer struct {
	inf toolscache.SharedIndexInformer
}

var _ discoveryv1informers.EndpointSliceInformer = sliceInformer{}

func (s sliceInformer) Informer() toolscache.SharedIndexInformer { return s.inf }
func (s sliceInformer) Lister() discoveryv1listers.EndpointSliceLister {
	return discoveryv1listers.NewEndpointSliceLister(s.inf.GetIndexer())
}

// checkSoon asks the availability loop for a round of checks.
func (a *Aggregator) checkSoon() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Start runs the informers, writes the authentication ConfigMap, registers
// the local APIServices and starts the availability checks. The server's
// caches must be starting (they answer the informers once synced). ctx
// bounds the start; the work runs until Stop.
func (a *Aggregator) Start(ctx context.Context) error {
	for _, inf := range []toolscache.SharedIndexInformer{a.apiServices, a.services, a.slices} {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			inf.Run(a.stop)
		}()
	}
	if a.cfg.Authentication != nil {
		// Only extension API servers read the ConfigMap: a stored copy
		// that cannot be read or replaced (encrypted under a key since
		// removed) must not keep the server down.
		if err := a.ensureAuthenticationConfigMap(ctx); err != nil {
			a.log.Error("extension-apiserver-authentication not written; extension API servers cannot read whom to trust", "err", err)
		}
	}
	if err := a.registerBuiltIn(ctx); err != nil {
		return err
	}
	a.wg.Add(1)
	go a.availabilityLoop()
	return nil
}

// Ready reports whether the informers have synced: before, the proxy
// would answer 404 for APIs that exist.
func (a *Aggregator) Ready() bool {
	return a.apiServices.HasSynced() && a.services.HasSynced() && a.slices.HasSynced()
}

// Stop stops the informers and the checks and waits for them.
func (a *Aggregator) Stop() {
	select {
	case <-a.stop:
		return
	default:
	}
	close(a.stop)
	a.wg.Wait()
}

// Handler serves aggregated APIs and the merged discovery, and passes
// everything else to delegate (the API server).
func (a *Aggregator) Handler(delegate http.Handler) http.Handler {
	return &handler{a: a, delegate: delegate}
}

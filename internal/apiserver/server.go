package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/utils/clock"

	"github.com/prometheus/client_golang/prometheus"
	psconfig "k8s.io/pod-security-admission/admission/api"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/serviceip"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/encryption"
	"github.com/myriad-k8s/myriad/internal/openapi"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// Config configures a Server. Zero values take the stated defaults.
type Config struct {
	// Store holds every object no shard in Shards holds. Required.
	Store storage.Store
	// Shards are more stores, each holding the resources it names
	// (shards.go); default none.
	Shards []StoreShard
	// StoreRecordsMetrics says the stores record upstream's
	// etcd_request_duration_seconds themselves (the etcd backend does,
	// on the same registry); the server then leaves it to them.
	StoreRecordsMetrics bool
	// Registry lists the served resources; default registry.New().
	Registry *registry.Registry
	// Scheme knows every served type; default registry.NewScheme().
	Scheme *runtime.Scheme
	// ServiceClusterIPRange is the CIDR ClusterIPs come from
	// (default 10.96.0.0/12).
	ServiceClusterIPRange string
	// ServiceNodePortRange is "low-high" (default 30000-32767).
	ServiceNodePortRange string
	// PublicAddress and PublicPort are where clients reach this server;
	// the "kubernetes" Service's endpoints point there. Unset: no
	// kubernetes Service.
	PublicAddress netip.Addr
	PublicPort    int32
	// AdmissionPlugins run after the built-in ones (NamespaceLifecycle,
	// Priority, the Service allocator), in order, in each phase they
	// implement (see package admission). Default none.
	AdmissionPlugins []admission.Interface
	// PodSecurity configures the PodSecurity admission plugin (defaults
	// and exemptions); nil: upstream's defaults (privileged everywhere).
	PodSecurity *psconfig.PodSecurityConfiguration
	// Encryption encrypts the resources it names at rest
	// (--encryption-provider-config); nil: none.
	Encryption *encryption.Config
	// ServiceAccounts, when set, serves serviceaccounts/token and runs the
	// ServiceAccount admission plugin (see ServiceAccountConfig). Nil:
	// neither — a server without a signing key.
	ServiceAccounts *ServiceAccountConfig
	// CacheImageDir, if set, is where the built-in resources' caches save
	// their state when the server stops and read it back at the next
	// start instead of listing and decoding the store (cache.Config's
	// ImageFile; cacheimage.go). Images are only checked against the
	// store's revisions, so set it only to a directory that belongs to
	// Store and Shards (the control plane does over its embedded store).
	CacheImageDir string
	// CacheImageTag names the binary writing and reading images (its
	// build ID): an image another build wrote is not used.
	CacheImageTag string
	// IndexedLabels are label keys the caches index besides "app".
	IndexedLabels []string
	// CompactionInterval is how often history older than one interval is
	// compacted away (default 5 minutes, as upstream; negative: never).
	CompactionInterval time.Duration
	// EventTTL is how long after its last write an event is deleted
	// (upstream's --event-ttl; default one hour; negative: never).
	EventTTL time.Duration
	// Kubelet is how the connect subresources (pods/log, exec, …,
	// nodes/proxy) reach kubelets and pods (connect.go).
	Kubelet KubeletConfig
	// Version is what /version reports.
	Version version.Info
	Logger  *slog.Logger
	// Metrics receives the server's and caches' metrics (default: a new
	// registry, exposed on /metrics).
	Metrics *prometheus.Registry
	Clock   clock.WithTicker
}

// Server is the API server's request handler and the caches behind it.
type Server struct {
	cfg        Config
	log        *slog.Logger
	clock      clock.WithTicker
	scheme     *runtime.Scheme
	codecs     *codecSet
	paramCodec runtime.ParameterCodec
	fields     *fieldTracker
	openapi    *openapi.OpenAPI
	metrics    *prometheus.Registry
	// serverMetrics are the handlers' own metrics.
	serverMetrics *serverMetrics

	// handlers are the built-in resources, fixed after New; custom
	// resources come and go in custom (crd_serve.go).
	handlers map[schema.GroupVersionResource]*resourceHandler
	custom   customResources
	crds     *crdController
	// discovery is replaced whenever the custom resources change.
	discovery  atomic.Pointer[discovery]
	namespaces *resourceHandler
	// admission is the chain every write goes through (admission.go);
	// services is its ClusterIP and node port allocator.
	admission *admission.Chain
	services  *serviceip.Allocator
	// extAdmission are the webhook and policy plugins (admission_ext.go).
	extAdmission *extensionAdmission
	// nsMemo holds the namespaces admission reads (nsmemo.go).
	nsMemo namespaceMemo
	// listWriters holds the 64 KiB buffered writers lists stream through
	// (liststream.go).
	listWriters sync.Pool
	// readiness holds the checks Ready waits for beyond the caches.
	readiness readinessChecks
	// reviewers answer the review APIs (reviews.go); set before Start.
	reviewers reviewers
	// shards route each resource to its store (shards.go).
	shards *shardSet
	// endpointLease is this server's place in the kubernetes Service's
	// endpoints (endpointleases.go); nil without a public address.
	endpointLease *endpointLeases

	mu struct {
		sync.Mutex
		started, stopped bool
	}
	stop chan struct{}
	wg   sync.WaitGroup
}

// New builds a Server; Start must be called before it serves resources.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = time.Hour
	}
	if cfg.CompactionInterval == 0 {
		cfg.CompactionInterval = 5 * time.Minute
	}
	var err error
	if cfg.Scheme == nil {
		if cfg.Scheme, err = registry.NewScheme(); err != nil {
			return nil, err
		}
	}
	if cfg.Registry == nil {
		if cfg.Registry, err = registry.New(); err != nil {
			return nil, err
		}
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, clock: cfg.Clock, scheme: cfg.Scheme,
		codecs:     newCodecSet(cfg.Scheme),
		paramCodec: runtime.NewParameterCodec(cfg.Scheme),
		metrics:    cfg.Metrics,
		handlers:   map[schema.GroupVersionResource]*resourceHandler{},
		stop:       make(chan struct{}),
	}
	if s.serverMetrics, err = newServerMetrics(cfg.Metrics, cfg.StoreRecordsMetrics); err != nil {
		return nil, err
	}
	if s.shards, err = newShardSet(cfg.Store, cfg.Shards); err != nil {
		return nil, err
	}
	if err := cfg.Metrics.Register(newStorageMetrics(s)); err != nil {
		return nil, err
	}
	d, err := newDiscovery(cfg.Registry.Resources())
	if err != nil {
		return nil, err
	}
	s.discovery.Store(d)
	if s.openapi, err = openapi.New(openapi.Config{Resources: openAPIResources(cfg.Registry), Version: cfg.Version.GitVersion}); err != nil {
		return nil, fmt.Errorf("building OpenAPI documents: %w", err)
	}
	tc, err := s.openapi.TypeConverter()
	if err != nil {
		return nil, fmt.Errorf("building the type converter: %w", err)
	}
	if s.fields, err = newFieldTracker(cfg.Scheme, cfg.Registry, tc, s.log.Warn); err != nil {
		return nil, err
	}
	if err := s.prepareCacheImageDir(); err != nil {
		return nil, err
	}
	for _, res := range cfg.Registry.Resources() {
		h, err := s.newResourceHandler(res)
		if err != nil {
			return nil, err
		}
		s.handlers[res.GroupVersionResource()] = h
	}
	s.warnUnservedShards()
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	if h, ok := s.handlers[nsGVR]; ok {
		s.namespaces = h
	} else {
		return nil, errors.New("apiserver: the registry does not serve namespaces")
	}
	if s.admission, err = s.newAdmission(); err != nil {
		return nil, err
	}
	s.installHooks()
	if err := s.installConnect(); err != nil {
		return nil, err
	}
	s.newCRDController()
	return s, nil
}

func (s *Server) newResourceHandler(res *registry.Resource) (*resourceHandler, error) {
	var conv *storageConversion
	if st := s.cfg.Registry.StorageResource(res); st != res {
		conv = &storageConversion{scheme: s.scheme, storage: st, gvk: st.GroupVersionKind()}
	}
	// Encryption is chosen by the stored resource, which every version
	// served over the same keys shares.
	storedGR := s.cfg.Registry.StorageResource(res).GroupVersionResource().GroupResource()
	base := s.storeForResource(storedGR)
	st := s.cfg.Encryption.Wrap(storedGR, base)
	image, err := s.cacheImageFile(cacheMetricsName(res, conv), st != base)
	if err != nil {
		return nil, err
	}
	h := &resourceHandler{s: s, res: res, fields: s.fields, objects: newObjectStore(res, st, s.codecs.storage, s.serverMetrics, conv)}
	indexedFields := []string{}
	if res.SelectableFields != nil {
		if _, ok := res.SelectableFields(res.New())["spec.nodeName"]; ok {
			indexedFields = append(indexedFields, "spec.nodeName")
		}
	}
	if err := s.attachCache(h, st, cacheMetricsName(res, conv), indexedFields, image); err != nil {
		return nil, err
	}
	return h, nil
}

// attachCache gives h its watch cache over st, indexing indexedFields
// besides the labels; metricsName names it in metrics. imageFile is where
// it keeps its image ("": none).
func (s *Server) attachCache(h *resourceHandler, st storage.Store, metricsName schema.GroupResource, indexedFields []string, imageFile string) error {
	res := h.res
	c, err := cache.New(cache.Config{
		Store:         st,
		Prefix:        h.objects.prefix(),
		Resource:      metricsName,
		ClusterScoped: !res.Namespaced,
		// The cache builds bookmarks from NewFunc and the server encodes
		// them as they are: without TypeMeta, client-go cannot decode a
		// bookmark ("Object 'Kind' is missing") and ends the watch.
		NewFunc: func() runtime.Object {
			obj := res.New()
			obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
			return obj
		},
		Decode:         h.objects.decode,
		DecodeForIndex: h.objects.decodeForIndex,
		CompressValues: true, // at a million objects the stored bytes are most of the memory
		ImageFile:      imageFile,
		ImageTag:       s.cfg.CacheImageTag,
		Attrs:          h.attrs,
		IndexedFields:  indexedFields,
		IndexedLabels:  append([]string{"app"}, s.cfg.IndexedLabels...),
		Clock:          s.clock,
		Logger:         s.log.With("resource", res.GroupVersionResource().String()),
		Metrics:        s.metrics,
	})
	if err != nil {
		return fmt.Errorf("cache for %s: %w", res.GroupVersionResource(), err)
	}
	h.cache = c
	h.storedProtobuf = c.KeepsStoredBytes() && h.objects.metaField1
	return nil
}

// cacheMetricsName names a resource's cache in metrics: its group
// resource, and the version too for a version served over another's
// storage, whose cache would otherwise share the storage version's name.
func cacheMetricsName(res *registry.Resource, conv *storageConversion) schema.GroupResource {
	gr := res.GroupVersionResource().GroupResource()
	if conv != nil {
		gr.Group = res.GroupVersion.String()
	}
	return gr
}

// Start fills every cache from the store and starts background work
// (history compaction). It returns at once; Ready reports when caches are
// synced. ctx bounds the start itself; the caches run until Stop, not
// until ctx ends, because at shutdown the in-process components stop
// first and still read (a leader releasing its Lease does a consistent
// GET, which waits on its cache).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.started {
		return errors.New("apiserver: already started")
	}
	s.mu.started = true
	for _, h := range s.handlers {
		if err := h.cache.Start(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("starting cache for %s: %w", h.res.Resource, err)
		}
	}
	// Each step is timed: with a million objects a start took 22 s
	// between the caches' start and the bootstrap's writes, and the log
	// did not say where.
	start := time.Now()
	for _, step := range []struct {
		name string
		run  func() error
	}{
		{"service allocations", func() error { return s.startServiceAllocations(ctx) }},
		// Before bootstrap: its writes go through the webhook and policy
		// plugins, which wait for their informers.
		{"extension admission", s.startExtensionAdmission},
		{"bootstrap", func() error { return s.bootstrapWhenReady(ctx) }},
		{"event expiry", s.startEventExpiry},
	} {
		if err := step.run(); err != nil {
			return err
		}
		s.log.Info("started", "part", step.name, "after", time.Since(start).Round(time.Millisecond))
	}
	for _, sh := range s.shards.all {
		if s.cfg.CompactionInterval < 0 {
			break
		}
		s.startCompaction(sh)
	}
	s.startCRDController()
	return nil
}

// Stop stops caches and background work; it is idempotent.
func (s *Server) Stop() {
	s.mu.Lock()
	if s.mu.stopped || !s.mu.started {
		s.mu.stopped = true
		s.mu.Unlock()
		return
	}
	s.mu.stopped = true
	s.mu.Unlock()
	// While the caches still serve the writes it makes.
	s.releaseEndpointLease()
	close(s.stop)
	for _, h := range s.handlers {
		h.cache.Stop()
	}
	s.saveCacheImages()
	s.wg.Wait()
	// After the CRD controller (in wg) is done: it starts caches.
	s.stopCustomResources()
}

// Ready reports whether every cache is synced and every readiness check
// (AddReadinessCheck) passes.
func (s *Server) Ready() bool { return s.notReady() == nil }

// NotReady says why the server is not ready yet (what /readyz reports), or
// nil once it is.
func (s *Server) NotReady() error { return s.notReady() }

// notReady says why the server is not ready, or nil.
func (s *Server) notReady() error {
	var unsynced []string
	for _, h := range s.handlers {
		if !h.cache.Ready() {
			unsynced = append(unsynced, h.res.GroupVersionResource().GroupResource().String())
		}
	}
	if len(unsynced) > 0 {
		sort.Strings(unsynced)
		return fmt.Errorf("caches not synced: %s", strings.Join(unsynced, ", "))
	}
	if names := s.readiness.notReady(); len(names) > 0 {
		return fmt.Errorf("not ready: %s", strings.Join(names, ", "))
	}
	return nil
}

// ServeHTTP serves discovery, version and resource requests; the filters
// in front of it have already parsed RequestInfo and authenticated.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok {
		parsed, err := request.Parse(r)
		if err != nil {
			s.writeError(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		info = parsed
	}
	if !info.IsResourceRequest {
		s.serveNonResource(w, r)
		return
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	h, ok := s.handler(gvr)
	if !ok {
		if s.servesGroupVersion(gvr.GroupVersion()) {
			s.writeError(w, r, errNoRoute())
		} else {
			writeUnknownPath(w, r)
		}
		return
	}
	if !h.cache.Ready() && info.IsReadOnly() {
		// Upstream's cacher answers 429 with Retry-After, which client-go
		// retries by itself: a restart storm's clients wait a second
		// instead of failing (and logging) every read.
		s.writeError(w, r, apierrors.NewTooManyRequests("storage is (re)initializing: the cache for "+info.Resource+" is not ready yet", 1))
		return
	}
	if h.custom != nil && h.custom.deprecation != "" {
		addWarning(w, h.custom.deprecation)
	}
	h.serve(w, withWarnings(w, r, info), info)
}

func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) {
	switch path := strings.TrimSuffix(r.URL.Path, "/"); {
	case path == "/version":
		s.writeJSON(w, r, s.cfg.Version)
	case path == "/livez" || path == "/healthz":
		s.writeHealth(w, r, namedCheck("etcd", s.shards.health(r.Context())))
	case strings.HasPrefix(path, "/openapi/"):
		s.openapi.Handler().ServeHTTP(w, r)
	case path == "/readyz":
		err := s.notReady()
		if err == nil {
			err = namedCheck("etcd-readiness", s.shards.health(r.Context()))
		}
		s.writeHealth(w, r, err)
	default:
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && s.serveDiscovery(w, r) {
			return
		}
		writeUnknownPath(w, r)
	}
}

// writeUnknownPath answers a path outside every served group version and
// every non-resource path: upstream's go-restful container has no web
// service for it and it falls through to the delegation chain's
// notfoundhandler (k8s.io/apiserver/pkg/util/notfoundhandler), a bare
// http.NotFound. client-go turns that into a NotFound naming what it asked
// for, "the server could not find the requested resource (get
// pods.metrics.k8s.io)", the text the HPA controller's conditions quote
// when no metrics API is registered.
func writeUnknownPath(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }

// servesGroupVersion reports whether gv has a web service upstream, that
// is any served resource.
func (s *Server) servesGroupVersion(gv schema.GroupVersion) bool {
	for gvr := range s.handlers {
		if gvr.GroupVersion() == gv {
			return true
		}
	}
	for gvr := range s.custom.load() {
		if gvr.GroupVersion() == gv {
			return true
		}
	}
	return false
}

// errNoRoute is the answer for an unknown resource or subresource in a
// served group version: upstream's go-restful container finds the group
// version's web service but no route, and its service error handler
// writes this Status.
func errNoRoute() *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
		Message: "the server could not find the requested resource", Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{}, Code: http.StatusNotFound}}
}

func (s *Server) writeHealth(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "[-]%v\n%s check failed\n", err, strings.TrimPrefix(strings.TrimSuffix(r.URL.Path, "/"), "/"))
		return
	}
	fmt.Fprint(w, "ok")
}

// openAPIResources describes the registry's resources for the documents.
func openAPIResources(reg *registry.Registry) []openapi.Resource {
	var out []openapi.Resource
	for _, r := range reg.Resources() {
		out = append(out, openapi.Resource{
			GroupVersionKind: r.GroupVersionKind(), Resource: r.Resource, Namespaced: r.Namespaced,
			Verbs: r.Verbs, Subresources: r.Subresources,
		})
	}
	return out
}

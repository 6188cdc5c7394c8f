package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/server/mux"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/admission/upstream"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// API is what the dispatcher needs of the API server.
type API interface {
	// ServeHTTP serves the API behind authentication: the dispatcher's
	// own status writes go through it in-process.
	http.Handler
	// ListerWatcher feeds informers from a watch cache.
	ListerWatcher(gvr schema.GroupVersionResource) (toolscache.ListerWatcher, error)
	// Ready reports whether every cache is synced.
	Ready() bool
	// AddReadinessCheck gates the server's readiness.
	AddReadinessCheck(name string, ready func() bool)
	Sizer
}

// Config configures flow control. Fields state their defaults.
type Config struct {
	API     API
	Objects Objects
	// ServerConcurrencyLimit is the seats shared among the priority
	// levels. Default 600 (upstream's 400 + 200 max-in-flight).
	ServerConcurrencyLimit int
	// RequestWaitLimit bounds a queued request's wait when its context
	// has no deadline. Default 15 s (a quarter of the request timeout,
	// which is what requests with a deadline get).
	RequestWaitLimit time.Duration
	Estimator        EstimatorConfig
	Reject           RejectConfig
	// Metrics receives upstream's apiserver_flowcontrol_* families and
	// Myriad's own; nil skips them.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Controller is flow control for one server: create it with New before
// the server serves, Start it with the server, Stop it before the caches.
type Controller struct {
	cfg       Config
	log       *slog.Logger
	fc        utilflowcontrol.Interface
	informers informers.SharedInformerFactory
	fsInf     toolscache.SharedIndexInformer
	plInf     toolscache.SharedIndexInformer
	uaInf     toolscache.SharedIndexInformer
	estimate  *estimator
	gate      *listGate
	ua        uaRules
	heap      heapSampler
	// warm latches once the server has been ready: a cache that falls
	// behind later does not make every big list a 429.
	warm  latch
	debug *mux.PathRecorderMux
	m     *rejectMetrics

	// kick wakes the ensurer after a change to the configuration objects.
	kick chan struct{}
	// ensured is set once the bootstrap configuration was written; the
	// server is not ready before (upstream's
	// priority-and-fairness-config-producer post-start hook), so clients
	// never meet a cluster without its FlowSchemas.
	ensured atomic.Bool

	life struct {
		sync.Mutex
		started, stopped bool
		cancel           context.CancelFunc
	}
	wg sync.WaitGroup
}

// loopbackUser is who the dispatcher's status writes act as: the API
// server itself, as upstream's loopback client (exempt from flow control).
var loopbackUser = request.User{Name: "system:apiserver", Groups: []string{request.GroupMasters, request.GroupAuthenticated}}

// New builds the dispatcher and its informers; nothing runs until Start.
func New(cfg Config) (*Controller, error) {
	if cfg.API == nil || cfg.Objects == nil {
		return nil, errors.New("flowcontrol: API and Objects are required")
	}
	if cfg.ServerConcurrencyLimit <= 0 {
		cfg.ServerConcurrencyLimit = 600
	}
	if cfg.RequestWaitLimit <= 0 {
		cfg.RequestWaitLimit = 15 * time.Second
	}
	cfg.Estimator = cfg.Estimator.withDefaults(cfg.ServerConcurrencyLimit)
	cfg.Reject = cfg.Reject.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	u := loopbackUser
	client, err := kubernetes.NewForConfig(upstream.InProcessConfig(cfg.API, &u))
	if err != nil {
		return nil, fmt.Errorf("flowcontrol client: %w", err)
	}
	c := &Controller{cfg: cfg, log: cfg.Logger, kick: make(chan struct{}, 1)}
	c.informers = informers.NewSharedInformerFactory(client, 0)
	if c.fsInf, err = c.informerFor(flowSchemasGVR, &flowcontrolv1.FlowSchema{}, nil); err != nil {
		return nil, err
	}
	if c.plInf, err = c.informerFor(priorityLevelsGVR, &flowcontrolv1.PriorityLevelConfiguration{}, nil); err != nil {
		return nil, err
	}
	// Only the one ConfigMap: an informer over all ConfigMaps would keep
	// a second copy of every one in memory.
	one := fields.SelectorFromSet(fields.Set{"metadata.namespace": UserAgentRulesNamespace, "metadata.name": UserAgentRulesName}).String()
	if c.uaInf, err = c.informerFor(configMapsGVR, &corev1.ConfigMap{}, func(o *metav1.ListOptions) { o.FieldSelector = one }); err != nil {
		return nil, err
	}
	fcmetrics.Register()
	c.fc = utilflowcontrol.New(c.informers, client.FlowcontrolV1(), cfg.ServerConcurrencyLimit)
	c.estimate = &estimator{
		cfg:   cfg.Estimator,
		sizer: cfg.API,
		upstream: fcrequest.NewWorkEstimator(noObjectCounts, c.fc.GetInterestedWatchCount,
			fcrequest.DefaultWorkEstimatorConfig(), c.fc.GetMaxSeats),
		maxSeats: c.fc.GetMaxSeats,
	}
	c.gate = newListGate(cfg.Estimator.ListBudgetPerCore * int64(cfg.Estimator.Cores))
	c.debug = mux.NewPathRecorderMux("flowcontrol-debug")
	c.fc.Install(c.debug)
	if c.m, err = newRejectMetrics(cfg.Metrics); err != nil {
		return nil, err
	}
	c.ua.set(nil)
	cfg.API.AddReadinessCheck("priority-and-fairness-config-producer", c.ensured.Load)
	return c, nil
}

// informerFor registers, for obj's type, an informer over gvr's watch
// cache; the factory hands it to upstream's controller, which asks the
// factory for these types.
func (c *Controller) informerFor(gvr schema.GroupVersionResource, obj runtime.Object, tweak func(*metav1.ListOptions)) (toolscache.SharedIndexInformer, error) {
	lw, err := c.cfg.API.ListerWatcher(gvr)
	if err != nil {
		return nil, fmt.Errorf("flowcontrol informer for %s: %w", gvr, err)
	}
	if tweak != nil {
		lw = tweakedLW{lw: lw, tweak: tweak}
	}
	return c.informers.InformerFor(obj, func(kubernetes.Interface, time.Duration) toolscache.SharedIndexInformer {
		return toolscache.NewSharedIndexInformer(lw, obj, 0, toolscache.Indexers{})
	}), nil
}

// tweakedLW narrows a ListerWatcher's lists and watches.
type tweakedLW struct {
	lw    toolscache.ListerWatcher
	tweak func(*metav1.ListOptions)
}

func (t tweakedLW) List(o metav1.ListOptions) (runtime.Object, error) {
	t.tweak(&o)
	return t.lw.List(o)
}

func (t tweakedLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	t.tweak(&o)
	return t.lw.Watch(o)
}

// Start runs the informers, the bootstrap ensurer and upstream's
// controller until Stop. It returns at once; requests queue (and the
// dispatcher treats them per its initial configuration) until the
// informers sync.
func (c *Controller) Start(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.started {
		return errors.New("flowcontrol: started twice")
	}
	c.life.started = true
	ctx, cancel := context.WithCancel(ctx)
	c.life.cancel = cancel
	kick := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.wake() },
		UpdateFunc: func(_, _ any) { c.wake() },
		DeleteFunc: func(any) { c.wake() },
	}
	for _, inf := range []toolscache.SharedIndexInformer{c.fsInf, c.plInf} {
		if _, err := inf.AddEventHandler(kick); err != nil {
			return err
		}
	}
	setUA := func(obj any) {
		cm, _ := obj.(*corev1.ConfigMap)
		for _, err := range c.ua.set(cm) {
			c.log.Warn("user-agent rule ignored", "configmap", UserAgentRulesNamespace+"/"+UserAgentRulesName, "err", err)
		}
	}
	if _, err := c.uaInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    setUA,
		UpdateFunc: func(_, obj any) { setUA(obj) },
		DeleteFunc: func(any) { setUA(nil) },
	}); err != nil {
		return err
	}
	c.informers.Start(ctx.Done())
	c.wg.Go(func() {
		if err := c.fc.Run(ctx.Done()); err != nil {
			c.log.Error("priority and fairness controller stopped", "err", err)
		}
	})
	c.wg.Go(func() { c.ensureLoop(ctx) })
	c.wg.Go(func() { c.sampleLoop(ctx) })
	return nil
}

// Stop ends everything Start started and waits for it; idempotent.
func (c *Controller) Stop() {
	c.life.Lock()
	if c.life.stopped || !c.life.started {
		c.life.stopped = true
		c.life.Unlock()
		return
	}
	c.life.stopped = true
	c.life.cancel()
	c.life.Unlock()
	c.wg.Wait()
	c.informers.Shutdown()
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// ensureLoop keeps the bootstrap configuration: once the server is
// ready, at every change to the objects, and every minute besides.
func (c *Controller) ensureLoop(ctx context.Context) {
	if !toolscache.WaitForCacheSync(ctx.Done(), c.fsInf.HasSynced, c.plInf.HasSynced) {
		return
	}
	fs := flowSchemaOps(func() []*flowcontrolv1.FlowSchema { return listOf[*flowcontrolv1.FlowSchema](c.fsInf) })
	pl := priorityLevelOps(func() []*flowcontrolv1.PriorityLevelConfiguration {
		return listOf[*flowcontrolv1.PriorityLevelConfiguration](c.plInf)
	})
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := ensureAll(ctx, c.cfg.Objects, fs, pl); err != nil && ctx.Err() == nil {
			c.log.Warn("ensuring the bootstrap flow control configuration", "err", err)
			// Retry soon: a write may have failed while caches warmed.
			c.wakeAfter(ctx, time.Second)
		} else {
			c.ensured.Store(true)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-t.C:
		}
	}
}

func (c *Controller) wakeAfter(ctx context.Context, d time.Duration) {
	c.wg.Go(func() {
		select {
		case <-ctx.Done():
		case <-time.After(d):
			c.wake()
		}
	})
}

func listOf[T any](inf toolscache.SharedIndexInformer) []T {
	items := inf.GetStore().List()
	out := make([]T, 0, len(items))
	for _, it := range items {
		if t, ok := it.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

func (c *Controller) sampleLoop(ctx context.Context) {
	if c.cfg.Reject.MemoryThresholdBytes == 0 {
		return
	}
	t := time.NewTicker(samplePeriod)
	defer t.Stop()
	for {
		c.heap.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DebugHandler serves upstream's /debug/api_priority_and_fairness/dump_*
// endpoints.
func (c *Controller) DebugHandler() http.Handler { return c.debug }

// latch is a bool that, once true, stays true.
type latch struct{ set atomic.Bool }

func (l *latch) check(cond func() bool) bool {
	if l.set.Load() {
		return true
	}
	if cond() {
		l.set.Store(true)
		return true
	}
	return false
}

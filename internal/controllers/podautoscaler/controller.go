package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "horizontalpodautoscaling"

// Options are the controller's knobs; zero fields take the defaults
// stated, kube-controller-manager's.
type Options struct {
	// SyncPeriod is how often every HPA is reconciled (15 s,
	// --horizontal-pod-autoscaler-sync-period).
	SyncPeriod time.Duration
	// Tolerance is the usage ratio's distance from 1 below which nothing
	// changes (0.1); a behavior's per-direction tolerance overrides it.
	Tolerance float64
	// CPUInitializationPeriod (5 m) and InitialReadinessDelay (30 s) decide
	// which pods' CPU samples are trusted (see calculator).
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration
	// DownscaleStabilizationWindow (5 m) is how far back the highest
	// recommendation holds a scale-down, for HPAs without a behavior.
	DownscaleStabilizationWindow time.Duration

	// RESTConfig builds what is not given below: the scale client, the
	// RESTMapper (from discovery) and the metrics clients. Required unless
	// Scales, Mapper and Metrics are all set (tests).
	RESTConfig *rest.Config
	Scales     scale.ScalesGetter
	Mapper     meta.RESTMapper
	Metrics    MetricsSource
}

func (o Options) withDefaults() Options {
	if o.SyncPeriod <= 0 {
		o.SyncPeriod = 15 * time.Second
	}
	if o.Tolerance <= 0 {
		o.Tolerance = 0.1
	}
	if o.CPUInitializationPeriod <= 0 {
		o.CPUInitializationPeriod = 5 * time.Minute
	}
	if o.InitialReadinessDelay <= 0 {
		o.InitialReadinessDelay = 30 * time.Second
	}
	if o.DownscaleStabilizationWindow <= 0 {
		o.DownscaleStabilizationWindow = 5 * time.Minute
	}
	return o
}

// Controller is the horizontal pod autoscaler controller.
type Controller struct {
	reconcile.Base
	opts     Options
	hpas     autoscalinglisters.HorizontalPodAutoscalerLister
	pods     corelisters.PodLister
	scales   scale.ScalesGetter
	mapper   meta.RESTMapper
	calc     *calculator
	recorder record.EventRecorder
	history  *history
	clock    clock.WithTicker

	// selectors are the pod selectors of the HPAs last synced, to find
	// pods claimed by more than one HPA.
	selectors struct {
		sync.Mutex
		m map[string]labels.Selector
	}
}

// Descriptor is the controller's entry in the manager's list (5 workers,
// as upstream's --concurrent-horizontal-pod-autoscaler-syncs). The
// manager replaces New with one carrying its REST configuration.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Describe(Name, 5, func(c *controllerctx.Context) (*Controller, error) { return New(c, Options{}) })
}

// New builds the controller and registers its handlers; it calls no API.
func New(c *controllerctx.Context, opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	if opts.Mapper == nil {
		opts.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	}
	if opts.Scales == nil || opts.Metrics == nil {
		if opts.RESTConfig == nil {
			return nil, errors.New("podautoscaler: a REST configuration is required for the scale and metrics clients")
		}
	}
	if opts.Scales == nil {
		s, err := scale.NewForConfig(opts.RESTConfig, opts.Mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(c.Client.Discovery()))
		if err != nil {
			return nil, fmt.Errorf("podautoscaler: scale client: %w", err)
		}
		opts.Scales = s
	}
	if opts.Metrics == nil {
		m, err := NewRESTMetrics(opts.RESTConfig, opts.Mapper)
		if err != nil {
			return nil, fmt.Errorf("podautoscaler: %w", err)
		}
		opts.Metrics = m
	}
	hpaInf := c.Informers.Autoscaling().V2().HorizontalPodAutoscalers()
	podInf := c.Informers.Core().V1().Pods()
	hc := &Controller{
		opts:     opts,
		hpas:     hpaInf.Lister(),
		pods:     podInf.Lister(),
		scales:   opts.Scales,
		mapper:   opts.Mapper,
		recorder: podcontrol.Recorder(c, "horizontal-pod-autoscaler"),
		history:  newHistory(),
		clock:    c.Clock,
	}
	if hc.clock == nil {
		hc.clock = clock.RealClock{}
	}
	hc.selectors.m = map[string]labels.Selector{}
	// Every HPA is synced once per SyncPeriod whatever happens to it: the
	// queue's only delay is that fixed interval, which also folds a burst of
	// updates into one sync, as upstream's FixedItemIntervalRateLimiter.
	hc.Base = reconcile.NewBase(c, Name, hc.sync, reconcile.Options[string]{RateLimiter: fixedInterval(opts.SyncPeriod)})
	hc.calc = &calculator{metrics: opts.Metrics, pods: hc.pods, clock: hc.Clock,
		cpuInitialization: opts.CPUInitializationPeriod, readinessDelay: opts.InitialReadinessDelay}
	hc.Synced = []cache.InformerSynced{hpaInf.Informer().HasSynced, podInf.Informer().HasSynced}
	return hc, reconcile.AddHandlers(reconcile.Handler{Informer: hpaInf.Informer(), Handler: cache.ResourceEventHandlerFuncs{
		AddFunc:    hc.enqueue,
		UpdateFunc: func(_, cur any) { hc.enqueue(cur) },
		DeleteFunc: func(obj any) {
			if key, ok := reconcile.Key(obj); ok {
				hc.Queue.Forget(key)
			}
		},
	}})
}

// mapperResetInterval is how often the discovery-backed RESTMapper
// forgets what it learned, so targets of kinds served later (a new CRD
// with a scale subresource) are found, as kube-controller-manager's.
const mapperResetInterval = 30 * time.Second

// Run works until ctx is done, refreshing the RESTMapper meanwhile.
func (hc *Controller) Run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	if r, ok := hc.mapper.(interface{ Reset() }); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := hc.clock.NewTicker(mapperResetInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C():
					r.Reset()
				}
			}
		}()
	}
	hc.Base.Run(ctx, workers)
	wg.Wait()
}

// enqueue adds the HPA after the sync period; a key already waiting keeps
// its earlier time.
func (hc *Controller) enqueue(obj any) {
	if key, ok := reconcile.Key(obj); ok {
		hc.Queue.AddRateLimited(key)
	}
}

// sync reconciles one HPA and schedules its next sync; a deleted HPA's
// history is dropped.
func (hc *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := hc.hpas.HorizontalPodAutoscalers(ns).Get(name)
	if apierrors.IsNotFound(err) {
		hc.history.forget(key)
		hc.selectors.Lock()
		delete(hc.selectors.m, key)
		hc.selectors.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	err = hc.reconcile(ctx, hpa, key)
	if err == nil {
		// On error the Loop requeues it, after the same fixed interval.
		hc.Queue.AddRateLimited(key)
	}
	return err
}

// fixedInterval delays every key by the same interval and never counts
// retries, so a failing HPA is retried every sync period forever.
type fixedInterval time.Duration

func (f fixedInterval) When(string) time.Duration { return time.Duration(f) }
func (fixedInterval) Forget(string)               {}
func (fixedInterval) NumRequeues(string) int      { return 0 }

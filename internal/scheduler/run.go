package scheduler

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"

	"github.com/myriad-k8s/myriad/internal/leaderelect"
	schedcache "github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/core"
	"github.com/myriad-k8s/myriad/internal/scheduler/metrics"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// ErrLeadershipLost is returned by Run when this replica failed to renew
// the Lease while leading; like kube-scheduler, the caller should exit
// (its cache may hold assumptions the new leader does not know of).
var ErrLeadershipLost = leaderelect.ErrLeaseLost

// Run schedules pods until ctx is done. With LeaderElect it first waits to
// acquire the Lease (informers already running, so a standby takes over
// warm) and releases it on shutdown.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.setDefaults(); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg.RESTConfig)
	if err != nil {
		return fmt.Errorf("scheduler client: %w", err)
	}
	m, err := metrics.New(cfg.Metrics)
	if err != nil {
		return err
	}
	log := cfg.Logger.With("component", "scheduler")

	c := schedcache.New(0)
	q := queue.New(queue.Config{OnChange: func(l queue.Lengths) { m.SetPending(l.Active, l.Backoff, l.Unschedulable) }})

	broadcaster := events.NewEventBroadcasterAdapterWithContext(ctx, client)
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(cfg.SchedulerName)

	reporter := newAPIReporter(client, recorder)
	defer reporter.wait()
	factory, ownFactory := cfg.Informers, false
	if factory == nil {
		factory, ownFactory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropManagedFields)), true
	}
	pdbs := factory.Policy().V1().PodDisruptionBudgets()
	// VolumeBinding's caches: three more list+watches, holding only what
	// the cluster has of claims, volumes and classes (nothing, in a
	// cluster without storage).
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	scInf := factory.Storage().V1().StorageClasses()
	vols := volumeListers{claims: pvcInf.Lister(), volumes: pvInf.Lister(), classes: scInf.Lister()}
	sched, err := core.New(core.Config{
		Profile:                  cfg.SchedulerName,
		EquivalenceClasses:       !cfg.DisableEquivalenceClasses,
		BatchSize:                cfg.BatchSize,
		PercentageOfNodesToScore: cfg.PercentageOfNodesToScore,
		Parallelism:              cfg.Parallelism,
		DisablePreemption:        cfg.DisablePreemption,
		MaxConcurrentBinds:       cfg.MaxConcurrentBinds,
		Logger:                   log,
		Metrics:                  m,
		Binder:                   apiBinder{client: client},
		Reporter:                 reporter,
		PDBs:                     pdbLister{lister: pdbs.Lister()},
		Volumes:                  vols,
		VolumeBinder:             apiVolumeBinder{client: client, listers: vols, timeout: cfg.VolumeBindTimeout, poll: 100 * time.Millisecond},
	}, c, q)
	if err != nil {
		return err
	}
	h := &handlers{name: cfg.SchedulerName, cache: c, queue: q, sched: sched, equivalence: !cfg.DisableEquivalenceClasses}
	// synced are this scheduler's own: a shared factory may hold other
	// components' informers, which it need not wait for. A handler's
	// registration has synced once the handler has seen every object.
	synced := []cache.InformerSynced{pdbs.Informer().HasSynced}
	// A shared factory's informers outlive this function: its handlers
	// are removed on the way out, so nothing feeds a stopped queue.
	var registered []func()
	handle := func(inf cache.SharedIndexInformer, h cache.ResourceEventHandler) error {
		reg, err := inf.AddEventHandler(h)
		if err != nil {
			return err
		}
		synced = append(synced, reg.HasSynced)
		registered = append(registered, func() { _ = inf.RemoveEventHandler(reg) })
		return nil
	}
	if err := handle(factory.Core().V1().Nodes().Informer(), h.nodeHandler()); err != nil {
		return fmt.Errorf("node handler: %w", err)
	}
	if err := handle(factory.Core().V1().Pods().Informer(), h.podHandler()); err != nil {
		return fmt.Errorf("pod handler: %w", err)
	}
	for _, inf := range []cache.SharedIndexInformer{pvcInf.Informer(), pvInf.Informer(), scInf.Informer()} {
		if err := handle(inf, volumeHandler(q.MoveAllToActiveOrBackoff)); err != nil {
			return fmt.Errorf("volume handler: %w", err)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		for _, remove := range registered {
			remove()
		}
		cancel()
		wg.Wait()
		if ownFactory {
			factory.Shutdown()
		}
	}()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // ctx is done: it returns false only then
	}
	log.Info("caches synced", "nodes", c.NodeCount(), "pods", c.PodCount(), "pending", q.Lengths().Active)

	wg.Add(2)
	go func() { defer wg.Done(); q.Run(ctx) }()
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if n := c.Cleanup(now); n > 0 {
					log.Info("expired assumed pods without confirmation", "count", n)
					q.MoveAllToActiveOrBackoff()
				}
			}
		}
	}()
	broadcaster.StartRecordingToSink(ctx.Done())

	if !cfg.LeaderElect {
		sched.Run(ctx)
		return nil
	}
	electClient, err := kubernetes.NewForConfig(leaderelect.RESTConfig(cfg.RESTConfig, cfg.RenewDeadline, "myriad-scheduler/leader-election"))
	if err != nil {
		return fmt.Errorf("scheduler: election client: %w", err)
	}
	// leaderelect.Run returns once sched.Run has: its bindings are done.
	return leaderelect.Run(ctx, leaderelect.Config{
		Client:        electClient,
		Namespace:     "kube-system",
		Name:          "kube-scheduler",
		Identity:      cfg.Identity,
		LeaseDuration: cfg.LeaseDuration,
		RenewDeadline: cfg.RenewDeadline,
		RetryPeriod:   cfg.RetryPeriod,
		Logger:        log,
		Metrics:       cfg.Metrics,
	}, sched.Run)
}

// dropManagedFields is the transform of the scheduler's own factory: no
// plugin reads managedFields, and they are a third of a pod (upstream's
// scheduler drops them too). The objects are the factory's own fresh
// decodes, so they are trimmed in place.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaseLost is returned by Run when the leader fails to renew its Lease.
var ErrLeaseLost = errors.New("controllers: leader lease lost")

// elector runs client-go leader election on a Lease, with one addition for
// hot standby: a standby watches the Lease and, the moment the leader
// releases it (holderIdentity emptied on graceful shutdown), restarts its
// elector, whose first act is an immediate acquire attempt. client-go alone
// would only notice at its next RetryPeriod tick.
type elector struct {
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	run     func(ctx context.Context)
	metrics prometheus.Gauge

	mu struct {
		sync.Mutex
		// restart, when set, cancels the current standby round.
		restart func()
	}
}

// Round states: a round becomes leading once OnStartedLeading runs the
// controllers, or abandoned once the release watcher (or the end of the
// round) claims it first. The mutex orders the two claims.
const (
	roundStandby = iota
	roundLeading
	roundAbandoned
)

func (e *elector) loop(ctx context.Context) error {
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	e.watchReleases(watchCtx)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.LeaseNamespace, Name: e.cfg.LeaseName},
		Client:     e.client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
	}
	for ctx.Err() == nil {
		led, err := e.round(ctx, lock)
		if err != nil {
			return err
		}
		if led {
			if ctx.Err() != nil {
				return nil
			}
			return ErrLeaseLost
		}
	}
	return nil
}

// round runs one client-go elector until ctx is done, the Lease is lost,
// or a release is observed while standing by. led reports whether the
// controllers ran in this round.
func (e *elector) round(ctx context.Context, lock resourcelock.Interface) (led bool, err error) {
	roundCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		state = roundStandby
		runs  sync.WaitGroup
	)
	e.mu.Lock()
	e.mu.restart = func() {
		mu.Lock()
		defer mu.Unlock()
		if state == roundStandby {
			state = roundAbandoned
			cancel()
		}
	}
	e.mu.Unlock()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.cfg.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if state != roundStandby {
					mu.Unlock()
					return
				}
				state = roundLeading
				runs.Add(1)
				mu.Unlock()
				defer runs.Done()
				e.log.Info("became leader; starting controllers", "identity", e.cfg.Identity)
				e.metrics.Set(1)
				defer e.metrics.Set(0)
				e.run(lctx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != e.cfg.Identity {
					e.log.Info("observed leader", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return false, err
	}
	le.Run(roundCtx)
	mu.Lock()
	if state == roundStandby {
		state = roundAbandoned
	}
	leading := state == roundLeading
	mu.Unlock()
	runs.Wait()
	if leading {
		e.log.Info("stopped leading", "identity", e.cfg.Identity, "shutdown", ctx.Err() != nil)
	}
	return leading, nil
}

// watchReleases watches the one Lease and restarts a standby round when
// the Lease shows no holder.
func (e *elector) watchReleases(ctx context.Context) {
	lw := cache.NewFilteredListWatchFromClient(e.client.CoordinationV1().RESTClient(), "leases", e.cfg.LeaseNamespace,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", e.cfg.LeaseName).String()
		})
	inf := cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
	onChange := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || (l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "") {
			return
		}
		e.mu.Lock()
		restart := e.mu.restart
		e.mu.Unlock()
		if restart != nil {
			restart()
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onChange,
		UpdateFunc: func(_, obj any) { onChange(obj) },
		DeleteFunc: onChange,
	})
	go inf.RunWithContext(ctx)
}

// newLeaderMetric is upstream's leader_election_master_status gauge for
// this Lease. Another component of the same process (the scheduler in
// `myriad up`) may have registered the vector already; share it then.
func newLeaderMetric(reg prometheus.Registerer, name string) prometheus.Gauge {
	vec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "leader_election_master_status",
		Help: "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
	}, []string{"name"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				if existing, ok := are.ExistingCollector.(*prometheus.GaugeVec); ok {
					vec = existing
				}
			}
		}
	}
	return vec.WithLabelValues(name)
}

package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

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

// elector runs client-go leader election on a Lease, with two additions for
// hot standby, both driven by a watch on the Lease:
//
//   - the moment the leader releases the Lease (holderIdentity emptied on
//     graceful shutdown), a standby restarts its elector, whose first act
//     is an immediate acquire attempt; client-go alone would notice only
//     at its next RetryPeriod tick;
//   - when the watch has shown no renewal for LeaseDuration (the leader
//     crashed), the standby takes the Lease at once with a
//     compare-and-swap update on the resourceVersion it watched, then
//     restarts its elector, which finds itself the holder. client-go alone
//     dates the last renewal from its own polls, so it takes over up to
//     two RetryPeriods later.
//
// Both are safe for the same reason client-go is: every write is
// conditional on the resourceVersion read, so a leader that did renew
// makes the standby's write fail.
type elector struct {
	cfg     Config
	client  kubernetes.Interface
	log     *slog.Logger
	run     func(ctx context.Context)
	metrics prometheus.Gauge

	mu struct {
		sync.Mutex
		// restart, when set, cancels the current round if it is still
		// standing by, and reports whether it did.
		restart func() bool
		// lease is the Lease as last watched, seen when it last changed
		// (by our clock); expiry fires LeaseDuration after that.
		lease  *coordinationv1.Lease
		seen   time.Time
		expiry *time.Timer
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
	e.mu.restart = func() bool {
		mu.Lock()
		defer mu.Unlock()
		if state == roundStandby {
			state = roundAbandoned
			cancel()
			return true
		}
		return false
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

// watchReleases watches the one Lease: a release restarts a standby round
// at once; a Lease left unrenewed for LeaseDuration is taken over.
func (e *elector) watchReleases(ctx context.Context) {
	lw := cache.NewFilteredListWatchFromClient(e.client.CoordinationV1().RESTClient(), "leases", e.cfg.LeaseNamespace,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", e.cfg.LeaseName).String()
		})
	inf := cache.NewSharedIndexInformer(lw, &coordinationv1.Lease{}, 0, cache.Indexers{})
	onChange := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok {
			return
		}
		e.mu.Lock()
		if e.mu.lease != nil && e.mu.lease.ResourceVersion == l.ResourceVersion {
			// A relist replaying what we saw: not a renewal.
			e.mu.Unlock()
			return
		}
		e.mu.lease, e.mu.seen = l, time.Now()
		if e.mu.expiry != nil {
			e.mu.expiry.Stop()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if holder != "" && holder != e.cfg.Identity {
			// A little past the deadline, so a renewal racing with it
			// wins the compare-and-swap rather than losing its Lease.
			e.mu.expiry = time.AfterFunc(e.cfg.LeaseDuration+50*time.Millisecond, func() { e.takeOver(ctx) })
		}
		restart := e.mu.restart
		e.mu.Unlock()
		if holder == "" && restart != nil {
			restart()
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onChange,
		UpdateFunc: func(_, obj any) { onChange(obj) },
	})
	go func() {
		inf.RunWithContext(ctx)
		e.mu.Lock()
		if e.mu.expiry != nil {
			e.mu.expiry.Stop()
		}
		e.mu.Unlock()
	}()
}

// takeOver claims a Lease whose holder stopped renewing it, if nothing has
// changed since: the update carries the watched resourceVersion.
func (e *elector) takeOver(ctx context.Context) {
	e.mu.Lock()
	l, seen, restart := e.mu.lease, e.mu.seen, e.mu.restart
	e.mu.Unlock()
	if l == nil || restart == nil || ctx.Err() != nil || time.Since(seen) < e.cfg.LeaseDuration {
		return
	}
	old := resourcelock.LeaseSpecToLeaderElectionRecord(&l.Spec)
	now := metav1.NewTime(time.Now())
	next := l.DeepCopy()
	next.Spec = resourcelock.LeaderElectionRecordToLeaseSpec(&resourcelock.LeaderElectionRecord{
		HolderIdentity:       e.cfg.Identity,
		LeaseDurationSeconds: int(e.cfg.LeaseDuration / time.Second),
		AcquireTime:          now,
		RenewTime:            now,
		LeaderTransitions:    old.LeaderTransitions + 1,
	})
	if next.Spec.LeaseDurationSeconds != nil && *next.Spec.LeaseDurationSeconds < 1 {
		*next.Spec.LeaseDurationSeconds = 1
	}
	tctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	if _, err := e.client.CoordinationV1().Leases(l.Namespace).Update(tctx, next, metav1.UpdateOptions{}); err != nil {
		e.log.Debug("taking over the expired lease failed", "holder", old.HolderIdentity, "err", err)
		return
	}
	e.log.Info("took over the lease of a leader that stopped renewing", "previous", old.HolderIdentity, "unrenewedFor", time.Since(seen).Round(time.Millisecond))
	restart()
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

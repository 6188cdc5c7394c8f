package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLeaseLost is returned by Run when the leader failed to renew its
// Lease. The caller should exit, as kube-controller-manager and
// kube-scheduler do: its caches may hold assumptions the next leader does
// not know of.
var ErrLeaseLost = errors.New("leaderelect: leader lease lost")

// Config names the Lease and the timing. Zero durations take upstream's
// defaults, stated per field.
type Config struct {
	// Client reaches the API server. Give it a client of its own, so
	// renewals never queue behind the component's requests in a shared
	// rate limiter, with a timeout below RenewDeadline (see RESTConfig).
	// Required.
	Client kubernetes.Interface
	// Namespace and Name name the Lease (kube-system/kube-scheduler,
	// kube-system/kube-controller-manager). Required.
	Namespace, Name string
	// Identity is this replica's holder identity. Required.
	Identity string
	// LeaseDuration (15 s) is how long a standby waits after the last
	// renewal before it takes over a crashed leader; RenewDeadline (10 s)
	// how long the leader keeps retrying a renewal before giving up;
	// RetryPeriod (2 s) the interval between renewals and acquire
	// attempts. Standbys also watch the Lease and try at once when it is
	// released.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Logger defaults to slog.Default(); Metrics (leader_election_master_status
	// {name=Name}) may be nil.
	Logger  *slog.Logger
	Metrics prometheus.Registerer
}

// WithDefaults fills the zero durations and the logger, and checks that
// LeaseDuration > RenewDeadline > RetryPeriod.
func (c Config) WithDefaults() (Config, error) {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.LeaseDuration <= c.RenewDeadline || c.RenewDeadline <= c.RetryPeriod {
		return c, fmt.Errorf("leaderelect: need lease duration (%v) > renew deadline (%v) > retry period (%v)", c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// RESTConfig returns a copy of rc for the election Client: its own rate
// limiter (50 qps) and a timeout of half the renew deadline, so a stuck
// request cannot use up the deadline.
func RESTConfig(rc *rest.Config, renewDeadline time.Duration, userAgent string) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = 50, 100
	if renewDeadline == 0 {
		renewDeadline = 10 * time.Second
	}
	rc.Timeout = renewDeadline / 2
	if rc.UserAgent == "" {
		rc.UserAgent = userAgent
	}
	return rc
}

// Run calls lead with a context that ends when leadership does, while
// this replica holds the Lease; standbys wait, warm, until they acquire
// it. It returns nil once ctx is done (after releasing the Lease when
// leading, so a standby takes over at once), or ErrLeaseLost when the
// leader failed to renew.
func Run(ctx context.Context, cfg Config, lead func(ctx context.Context)) error {
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return err
	}
	if cfg.Client == nil || cfg.Name == "" || cfg.Namespace == "" || cfg.Identity == "" {
		return errors.New("leaderelect: Client, Namespace, Name and Identity are required")
	}
	e := &elector{cfg: cfg, client: cfg.Client, log: cfg.Logger, run: lead, metrics: newLeaderMetric(cfg.Metrics, cfg.Name)}
	return e.loop(ctx)
}

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
	cfg     Config // with defaults
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
		// stopped is set when the watch ends; an expiry firing after it
		// does nothing.
		stopped bool
	}
	// watchers joins the Lease watch and any takeover in flight.
	watchers sync.WaitGroup
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
	e.watchReleases(watchCtx)
	defer func() {
		stopWatch()
		e.watchers.Wait()
	}()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
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
		Name:            e.cfg.Name,
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
				e.log.Info("became leader", "lease", e.cfg.Name, "identity", e.cfg.Identity)
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
	leases := e.client.CoordinationV1().Leases(e.cfg.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", e.cfg.Name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return leases.Watch(ctx, o)
		},
	}
	// The client says whether it streams watch lists (a fake does not).
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, e.client), &coordinationv1.Lease{}, 0, cache.Indexers{})
	onChange := func(obj any) {
		l, ok := obj.(*coordinationv1.Lease)
		if !ok || l.Name != e.cfg.Name {
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
			e.mu.expiry = time.AfterFunc(e.cfg.LeaseDuration+50*time.Millisecond, func() {
				e.mu.Lock()
				if e.mu.stopped {
					e.mu.Unlock()
					return
				}
				e.watchers.Add(1)
				e.mu.Unlock()
				defer e.watchers.Done()
				e.takeOver(ctx)
			})
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
	e.watchers.Add(1)
	go func() {
		defer e.watchers.Done()
		inf.RunWithContext(ctx)
		e.mu.Lock()
		e.mu.stopped = true
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

package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/metrics"
	"github.com/myriad-k8s/myriad/internal/scheduler/plugins"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// Binder binds a pod to a node; it is called from binding goroutines and
// must be safe for concurrent use.
type Binder interface {
	Bind(ctx context.Context, pod *v1.Pod, node string) error
}

// Reporter publishes the scheduler's decisions (events, conditions,
// nominations, victim deletion). Safe for concurrent use.
type Reporter interface {
	// Scheduled: the binding succeeded.
	Scheduled(ctx context.Context, pod *v1.Pod, node string)
	// Unschedulable: no node fits; set PodScheduled=False with reason
	// Unschedulable and message, and emit FailedScheduling.
	Unschedulable(ctx context.Context, pod *v1.Pod, message string)
	// Preempt sets pod's status.nominatedNodeName to node and deletes the
	// victims.
	Preempt(ctx context.Context, pod *v1.Pod, node string, victims []*v1.Pod) error
}

// VolumeBinder carries out a pod's volume decisions on its node before
// the pod is bound (upstream's VolumeBinding PreBind): it pre-binds the
// chosen volumes, selects the node on claims to provision, and waits
// until the claims are bound. Called from binding goroutines; safe for
// concurrent use.
type VolumeBinder interface {
	BindVolumes(ctx context.Context, pod *v1.Pod, node string, b *plugins.VolumeBindings) error
}

// PDBLister lists PodDisruptionBudgets, which preemption respects as best
// effort. Optional.
type PDBLister interface {
	PDBs() []*policyv1.PodDisruptionBudget
}

// Config configures the scheduling loop.
type Config struct {
	// Profile is the scheduler name, for metric labels. Default
	// "default-scheduler".
	Profile string
	// EquivalenceClasses places pods of one class as a batch. Default off
	// here; the command and Run turn it on.
	EquivalenceClasses bool
	// BatchSize bounds a class batch. Default 256.
	BatchSize int
	// PercentageOfNodesToScore: 0 is upstream's adaptive percentage; 100
	// checks every node.
	PercentageOfNodesToScore int
	// Parallelism is the number of filtering goroutines. Default GOMAXPROCS.
	Parallelism int
	// DisablePreemption turns preemption off.
	DisablePreemption bool
	// RebuildSnapshot copies every node (and its pod list) before each
	// search instead of reading the incrementally maintained cache: what a
	// scheduler without incremental state pays per pod. For the benchmark's
	// comparison only; batches are placed one pod per search in this mode.
	RebuildSnapshot bool
	// MaxConcurrentBinds bounds bindings in flight. Default 64: an API
	// server answers 429 with Retry-After: 1s beyond its mutating-inflight
	// limit (200 by default), so thousands of simultaneous bindings would
	// mostly wait a second each; a bounded pool keeps them flowing.
	// Pods waiting for a slot stay assumed.
	MaxConcurrentBinds int

	Clock    clock.Clock
	Logger   *slog.Logger
	Metrics  *metrics.Metrics
	Binder   Binder
	Reporter Reporter
	PDBs     PDBLister
	// Volumes and VolumeBinder turn VolumeBinding on for pods with
	// claims; without them claims are not looked at.
	Volumes      plugins.VolumeLister
	VolumeBinder VolumeBinder
	// Seed seeds tie-breaking; 0 picks a random seed.
	Seed uint64
}

// Scheduler is the scheduling loop over a cache and a queue.
type Scheduler struct {
	cfg   Config
	cache *cache.Cache
	queue *queue.Queue
	rng   *rand.Rand // used only by the loop goroutine
	// nextStart is where the next search begins (loop goroutine only).
	nextStart int
	nominator *nominator
	binds     sync.WaitGroup
	// statusBuf and feasibleBuf are the search's scratch space (loop
	// goroutine only).
	statusBuf   []*framework.Status
	feasibleBuf []*framework.NodeInfo
	// bindSlots bounds bindings in flight.
	bindSlots chan struct{}
}

// New validates cfg and returns a Scheduler.
func New(cfg Config, c *cache.Cache, q *queue.Queue) (*Scheduler, error) {
	if cfg.Binder == nil {
		return nil, errors.New("core: Config.Binder is required")
	}
	if cfg.Profile == "" {
		cfg.Profile = "default-scheduler"
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 256
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxConcurrentBinds <= 0 {
		cfg.MaxConcurrentBinds = 64
	}
	if cfg.PercentageOfNodesToScore < 0 || cfg.PercentageOfNodesToScore > 100 {
		return nil, fmt.Errorf("core: percentageOfNodesToScore %d outside 0..100", cfg.PercentageOfNodesToScore)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Reporter == nil {
		cfg.Reporter = nopReporter{}
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Scheduler{cfg: cfg, cache: c, queue: q, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), nominator: newNominator(),
		bindSlots: make(chan struct{}, cfg.MaxConcurrentBinds)}, nil
}

type nopReporter struct{}

func (nopReporter) Scheduled(context.Context, *v1.Pod, string)                {}
func (nopReporter) Unschedulable(context.Context, *v1.Pod, string)            {}
func (nopReporter) Preempt(context.Context, *v1.Pod, string, []*v1.Pod) error { return nil }

// Run schedules until ctx is done or the queue is closed, then waits for
// in-flight bindings.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.binds.Wait()
	for {
		if err := s.ScheduleOne(ctx); err != nil {
			return
		}
	}
}

// WaitForBindings waits for the binding goroutines started so far.
func (s *Scheduler) WaitForBindings() { s.binds.Wait() }

// NominatedPodDeleted forgets a nomination (the pod went away).
func (s *Scheduler) NominatedPodDeleted(pod *v1.Pod) { s.nominator.remove(pod.UID) }

// ScheduleOne pops one pod (and, with equivalence classes, a batch of its
// class) and schedules it. It returns an error only when the queue is
// closed or ctx is done.
func (s *Scheduler) ScheduleOne(ctx context.Context) error {
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		return err
	}
	cycle := s.queue.SchedulingCycle()
	batch := []*queue.QueuedPod{qp}
	if s.cfg.EquivalenceClasses && qp.Class != "" {
		batch = append(batch, s.queue.PopClass(qp.Class, s.cfg.BatchSize-1)...)
	}
	s.scheduleBatch(ctx, batch, cycle)
	return nil
}

// result of one search for a pod class.
type searchResult struct {
	state    *plugins.State
	feasible []*framework.NodeInfo
	static   []int64 // ScoreStatic per feasible node
	scores   []int64 // static plus resource scores at search time
	// statuses of the nodes found infeasible, for the message and
	// preemption; only kept when nothing was feasible.
	failed    map[string]*framework.Status
	numNodes  int
	preFilter *framework.Status
}

// scheduleBatch places pods of one class (or a single pod).
func (s *Scheduler) scheduleBatch(ctx context.Context, batch []*queue.QueuedPod, cycle int64) {
	retries := 0
	for len(batch) > 0 {
		start := s.cfg.Clock.Now()
		res := s.search(batch[0].Info)
		n := len(batch)
		if res.state != nil && (res.state.DependsOnOtherPods() || s.cfg.RebuildSnapshot) {
			// Placing one changes where the next fits: one at a time.
			n = 1
		}
		placed := s.placeFromSearch(ctx, batch[:n], res, cycle, start)
		batch = batch[placed:]
		if placed > 0 {
			retries = 0
			continue
		}
		// Every feasible node changed under us between search and assume;
		// search again a few times, then let backoff retry.
		if retries++; retries > 3 {
			for _, qp := range batch {
				s.queue.Requeue(qp)
			}
			return
		}
	}
}

// placeFromSearch places as many of batch as the search's feasible nodes
// take, in order, and returns how many were handled (placed, or all of them
// reported unschedulable).
func (s *Scheduler) placeFromSearch(ctx context.Context, batch []*queue.QueuedPod, res *searchResult, cycle int64, start time.Time) int {
	if len(res.feasible) == 0 {
		s.handleUnschedulable(ctx, batch, res, cycle, start)
		return len(batch)
	}
	if len(batch) == 1 {
		node := s.selectHost(res)
		if s.assume(batch[0], res.state, node) {
			s.bindAsync(ctx, batch[0], node.Name, res.state.VolumeBindings(node.Node), start)
			return 1
		}
		// The node changed between the search and the assume; retry.
		return 0
	}
	h := newScoreHeap(res)
	placed := 0
	for placed < len(batch) && h.Len() > 0 {
		e := h.top()
		qp := batch[placed]
		if !s.assume(qp, res.state, e.node) {
			h.drop()
			continue
		}
		// A batch shares no volumes: pods with claims are not batched.
		s.bindAsync(ctx, qp, e.node.Name, nil, start)
		placed++
		var score int64
		s.cache.View(func(cache.Snapshot) { score = res.static[e.idx] + res.state.ScoreResources(e.node) })
		h.update(score)
	}
	return placed
}

// assume re-checks the node and assumes the pod on it, atomically with
// respect to other cache changes.
func (s *Scheduler) assume(qp *queue.QueuedPod, st *plugins.State, n *framework.NodeInfo) bool {
	podState := st
	if qp.Info != st.Pod {
		cp := *st
		cp.Pod = qp.Info
		podState = &cp
	}
	ok := s.cache.AssumeIf(qp.Info, n.Name, func(cur *framework.NodeInfo) bool {
		return podState.Filter(cur).IsSuccess()
	})
	if ok {
		s.nominator.remove(qp.Info.Pod.UID)
	}
	return ok
}

// bindAsync binds in a goroutine, as kube-scheduler's binding cycle:
// volumes first (PreBind), then the pod.
func (s *Scheduler) bindAsync(ctx context.Context, qp *queue.QueuedPod, node string, vb *plugins.VolumeBindings, start time.Time) {
	s.binds.Add(1)
	go func() {
		defer s.binds.Done()
		pod := qp.Info.Pod
		var err error
		if !vb.Empty() && s.cfg.VolumeBinder != nil {
			// Outside the bind slots: waiting for claims to bind must not
			// hold up other pods' bindings.
			err = s.cfg.VolumeBinder.BindVolumes(ctx, pod, node, vb)
		}
		if err == nil {
			s.bindSlots <- struct{}{}
			err = s.cfg.Binder.Bind(ctx, pod, node)
			<-s.bindSlots
		}
		now := s.cfg.Clock.Now()
		if err != nil {
			s.cfg.Logger.Info("binding failed", "pod", qp.Info.Key(), "node", node, "err", err)
			s.cache.ForgetPod(pod)
			s.cfg.Metrics.Attempt(metrics.Error, s.cfg.Profile, now.Sub(start).Seconds(), -1)
			s.queue.Requeue(qp)
			s.queue.MoveAllToActiveOrBackoff()
			return
		}
		s.cache.FinishBinding(pod, now)
		s.queue.Done(pod.UID)
		s.cfg.Metrics.Attempt(metrics.Scheduled, s.cfg.Profile, now.Sub(start).Seconds(), now.Sub(qp.InitialAttempt).Seconds())
		s.cfg.Reporter.Scheduled(ctx, pod, node)
	}()
}

// handleUnschedulable reports the batch unschedulable, after trying
// preemption for its first pod.
func (s *Scheduler) handleUnschedulable(ctx context.Context, batch []*queue.QueuedPod, res *searchResult, cycle int64, start time.Time) {
	msg := failureMessage(res)
	if res.preFilter == nil && !s.cfg.DisablePreemption {
		msg += " " + s.preempt(ctx, batch[0], res)
	}
	now := s.cfg.Clock.Now()
	for _, qp := range batch {
		s.cfg.Metrics.Attempt(metrics.Unschedulable, s.cfg.Profile, now.Sub(start).Seconds(), -1)
		s.cfg.Logger.Debug("unschedulable", "pod", qp.Info.Key(), "message", msg)
		s.cfg.Reporter.Unschedulable(ctx, qp.Info.Pod, msg)
		s.queue.AddUnschedulable(qp, cycle)
	}
}

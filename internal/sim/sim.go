package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/myriad-k8s/myriad/internal/procstat"
)

const protobufType = "application/vnd.kubernetes.protobuf"

// ErrUnknownNode is returned by Fail and Recover for a name that is not one
// of this simulator's nodes.
var ErrUnknownNode = errors.New("sim: unknown node")

// ErrNotStarted is returned by Recover before Start: a recovered node needs
// the run's context for its heartbeats and pod watch.
var ErrNotStarted = errors.New("sim: not started")

// Sim runs a set of hollow nodes. Create it with New, then Start it once.
// Its methods are safe for concurrent use.
type Sim struct {
	cfg    Config
	client kubernetes.Interface
	// beats writes Lease renewals and Node status updates:
	// wireHeartbeats against a server, typedHeartbeats on a fake client.
	beats  heartbeatWriter
	nodes  []*node
	byName map[string]*node

	// One scheduler and worker pool per class of work, so a backlog in one
	// never delays another: Lease renewals must never wait behind pods.
	heartbeats, podWork, greedy *scheduler

	lateness *durHist
	// podWrites is the latency of the nodes' pod status writes (first
	// attempts only, as the server answered them).
	podWrites *durHist
	metrics   *metrics
	// proxyLatency is the dry-run proxies' network programming latency.
	proxyLatency *durHist
	// proxyClient is the proxies' clientset, sharing decoded watch events
	// through proxyDecodes (proxydecode.go); nil on a fake client.
	proxyClient  kubernetes.Interface
	proxyDecodes *decodeCache
	// noPodWatch leaves pod events to the caller (unit tests).
	noPodWatch bool
	counters   counters
	// nodeDenied counts nodes' requests answered 401 or 403 (with
	// NodeIdentityImpersonate); nil on a fake client.
	nodeDenied *atomic.Uint64
	// pods indexes every node's pods by name and kubelet serves their
	// kubelet API; both nil unless Config.Kubelet.Enabled (kubelet is set
	// by Start, before any node registers).
	pods    *podIndex
	kubelet *kubeletListener

	// start is the time of Start; every node's periodic work sits on a grid
	// anchored there.
	start time.Time

	mu struct {
		sync.Mutex
		started bool
		ctx     context.Context // the run's context, set by Start
	}
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	// stopped is when Stop was called (zero before): Stats measures the
	// nodes' current gaps up to it.
	stopped atomic.Pointer[time.Time]
}

// counters are the simulator-wide event counts behind Stats and metrics.
type counters struct {
	registered, failed                       atomic.Int64
	podsStarting, podsRunning                atomic.Int64
	podsSucceeded, podsRejected, podsDeleted atomic.Uint64
	renewals, renewalErrors                  atomic.Uint64
	statusUpdates, statusErrors              atomic.Uint64
	greedyLists, greedyErrors                atomic.Uint64
	podUpdateErrors                          atomic.Uint64
	maxGap                                   atomic.Int64
}

// New validates cfg, fills its defaults and builds the simulator's client.
// Nothing talks to the API server until Start.
func New(cfg Config) (*Sim, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := rest.CopyConfig(cfg.RESTConfig)
	rc.ContentType = protobufType
	rc.AcceptContentTypes = protobufType + ",application/json"
	rc.RateLimiter = nil
	rc.QPS, rc.Burst = -1, 0 // client-go: a negative QPS means no limiter
	if cfg.QPS > 0 {
		// One limiter for the clientset and the heartbeat writer together.
		rc.QPS, rc.Burst = cfg.QPS, max(cfg.Burst, 1)
		rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(rc.QPS, rc.Burst)
	}
	if rc.UserAgent == "" {
		rc.UserAgent = "myriad-sim"
	}
	denied := new(atomic.Uint64)
	var httpClient, beatClient *http.Client
	switch cfg.NodeIdentity {
	case NodeIdentityToken:
		httpClient, beatClient, err = tokenClients(rc, cfg.HeartbeatsOverHTTP2, cfg.connPools(), denied)
	case NodeIdentityImpersonate:
		rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { return impersonateNodes{next: rt, denied: denied} })
		httpClient, beatClient, err = simClients(rc, cfg.HeartbeatsOverHTTP2, cfg.connPools())
	default:
		httpClient, beatClient, err = simClients(rc, cfg.HeartbeatsOverHTTP2, 1)
	}
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfigAndClient(rc, httpClient)
	if err != nil {
		return nil, fmt.Errorf("sim: building client: %w", err)
	}
	beats, err := newWireHeartbeats(rc, beatClient, client)
	if err != nil {
		return nil, err
	}
	s, err := newSim(cfg, client)
	if err != nil {
		return nil, err
	}
	s.beats = beats
	s.nodeDenied = denied
	if cfg.Proxies > 0 {
		s.proxyDecodes = newDecodeCache()
		if s.proxyClient, err = newProxyClient(rc, httpClient, client, s.proxyDecodes); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newSim builds a simulator on a defaulted cfg and a client (tests pass a
// fake one).
func newSim(cfg Config, client kubernetes.Interface) (*Sim, error) {
	s := &Sim{
		cfg:        cfg,
		client:     client,
		beats:      typedHeartbeats{client},
		byName:     make(map[string]*node, cfg.Nodes),
		heartbeats: newScheduler(cfg.Clock, cfg.HeartbeatWorkers),
		podWork:    newScheduler(cfg.Clock, cfg.PodWorkers),
		greedy:     newScheduler(cfg.Clock, cfg.GreedyWorkers),
		lateness:   newDurHist(),
		podWrites:  newDurHist(),
	}
	s.proxyLatency = newDurHist()
	if cfg.Kubelet.Enabled {
		s.pods = newPodIndex(s.byName)
	}
	for k := range cfg.Nodes {
		n := newNode(s, k)
		s.nodes = append(s.nodes, n)
		s.byName[n.name] = n
	}
	for _, name := range cfg.Fail.Nodes {
		if _, ok := s.byName[name]; !ok {
			return nil, fmt.Errorf("sim: Fail.Nodes: %w %q", ErrUnknownNode, name)
		}
	}
	if cfg.Metrics != nil {
		m, err := newMetrics(s, cfg.Metrics)
		if err != nil {
			return nil, err
		}
		s.metrics = m
	}
	return s, nil
}

// Run is New and Start, then runs the nodes until ctx is done and Stops.
// It returns nil when ctx ends after a successful start.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(cfg)
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.Stop()
	return nil
}

// Start registers every node (creating its Node and Lease, or reusing those
// a previous run left) and starts them: heartbeats, pod watches, greedy
// lists. It returns once every node is registered, or with the first
// registration error (after retries), in which case everything it started
// is stopped. The nodes run until ctx is done or Stop is called. Start may
// be called once.
func (s *Sim) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.mu.started {
		s.mu.Unlock()
		return errors.New("sim: already started")
	}
	s.mu.started = true
	runCtx, cancel := context.WithCancel(ctx)
	s.mu.ctx = runCtx
	s.cancel = cancel
	s.start = s.cfg.Clock.Now()
	s.mu.Unlock()

	s.heartbeats.start(runCtx, &s.wg)
	s.podWork.start(runCtx, &s.wg)
	s.greedy.start(runCtx, &s.wg)

	if s.cfg.Kubelet.Enabled {
		if err := s.startKubelet(runCtx); err != nil {
			s.Stop()
			return err
		}
	}
	if err := s.registerAll(runCtx); err != nil {
		s.Stop()
		return err
	}
	if s.cfg.PodWatch == PodWatchShared && !s.noPodWatch {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.watchPods(runCtx, "", nil)
		}()
	}
	if err := s.startProxies(runCtx); err != nil {
		s.Stop()
		return err
	}
	s.cfg.Logger.Info("hollow nodes registered", "nodes", len(s.nodes), "took", s.cfg.Clock.Since(s.start), "seed", s.cfg.Seed)
	s.scheduleFailPlan(runCtx)
	return nil
}

// registerAll registers the nodes on RegistrationWorkers goroutines.
func (s *Sim) registerAll(ctx context.Context) error {
	next := make(chan *node)
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	for range min(s.cfg.RegistrationWorkers, len(s.nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				if err := n.register(ctx); err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			}
		}()
	}
	var err error
feed:
	for _, n := range s.nodes {
		select {
		case next <- n:
		case err = <-errc:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errc:
		default:
		}
	}
	return err
}

// Stop stops every node and waits for all of the simulator's goroutines.
// Nodes and Leases stay in the API server (a restarted simulator reuses
// them). Safe to call more than once and before Start.
func (s *Sim) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		cancel := s.cancel
		s.mu.Unlock()
		now := s.cfg.Clock.Now()
		s.stopped.Store(&now)
		if cancel != nil {
			cancel()
		}
		s.wg.Wait()
	})
}

// NodeNames returns the names of the simulator's nodes in index order.
func (s *Sim) NodeNames() []string {
	names := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		names[i] = n.name
	}
	return names
}

// Fail makes node name stop heartbeating (no Lease renewals, no status
// writes, no greedy lists) and stop reacting to its pods, as if its kubelet
// had died. Pods it runs keep their last status.
func (s *Sim) Fail(name string) error {
	n, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	n.fail()
	return nil
}

// Recover brings a failed node back: it renews its Lease and writes its
// Node status (Ready) at once, relists its pods and resumes its schedule.
// Recovering a node that has not failed does nothing.
func (s *Sim) Recover(name string) error {
	n, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownNode, name)
	}
	s.mu.Lock()
	ctx := s.mu.ctx
	s.mu.Unlock()
	if ctx == nil {
		return ErrNotStarted
	}
	n.recover(ctx)
	return nil
}

// Stats is a snapshot of what the simulator has done.
type Stats struct {
	Nodes      int // configured
	Registered int // registered so far
	Failed     int // currently failed (Fail without Recover)

	PodsStarting    int    // admitted, waiting for their startup delay
	PodsRunning     int    // Running now
	PodsSucceeded   uint64 // run to Succeeded since start
	PodsRejected    uint64 // rejected at admission (OutOfcpu, ...) since start
	PodsDeleted     uint64 // graceful deletions confirmed with a grace-0 delete
	PodUpdateErrors uint64 // pod status writes or deletes that failed

	// Renewals counts acknowledged heartbeats: Lease renewals, or full Node
	// status writes with FullStatusHeartbeat.
	Renewals      uint64
	RenewalErrors uint64
	// Lateness is the distribution of heartbeat acknowledgement time minus
	// scheduled time since start; LatenessP50/P99/Max summarize it.
	Lateness                              Histogram
	LatenessP50, LatenessP99, LatenessMax time.Duration
	// MaxRenewGap is the longest any running node went without an
	// acknowledged heartbeat (including the current wait of every node); it
	// must stay below LeaseDuration for no node to go NotReady.
	MaxRenewGap time.Duration

	NodeStatusUpdates uint64 // Node status writes (besides full-status heartbeats)
	NodeStatusErrors  uint64
	GreedyLists       uint64
	GreedyListErrors  uint64
	// NodeRequestsDenied counts nodes' requests the server answered 401
	// Unauthorized or 403 Forbidden: zero unless a node's identity is
	// refused what a kubelet needs (as across a restart, if the Node
	// authorizer answered before its graph was complete).
	NodeRequestsDenied uint64

	// HeartbeatDispatchP99 is the p99 delay between a heartbeat's due time
	// and a worker picking it up; HeartbeatSaturated counts heartbeats that
	// found every worker busy, and HeartbeatMaxBusy is the most workers ever
	// busy at once. Together they show whether the pool is big enough.
	HeartbeatDispatchP99 time.Duration
	HeartbeatSaturated   uint64
	HeartbeatMaxBusy     int
	HeartbeatWorkers     int

	// The same for pod work (status writes and deletions): a pod whose
	// start is due waits PodDispatch for a free worker, and a busy pool
	// (PodMaxBusy = PodWorkers, PodSaturated > 0) means pods queue in the
	// simulator rather than in the server. PodWrite is how long the
	// server took to answer a pod status write.
	PodDispatch  Histogram
	PodSaturated uint64
	PodMaxBusy   int
	PodWorkers   int
	PodWrite     Histogram

	// ProxyProgramming is the dry-run proxies' network programming latency
	// (Config.Proxies): EndpointSlice trigger time to rules computed.
	ProxyProgramming Histogram
	// ProxyDecodes counts the watch event objects the proxies decoded;
	// ProxyDecodesShared those they received already decoded by another.
	ProxyDecodes, ProxyDecodesShared uint64

	// CPUSeconds is the process's user+system CPU time; RSSBytes its
	// resident memory (0 where /proc is unavailable).
	CPUSeconds float64
	RSSBytes   uint64
}

// Stats returns a snapshot of the simulator's counters.
func (s *Sim) Stats() Stats {
	c := &s.counters
	st := Stats{
		Nodes:                len(s.nodes),
		Registered:           int(c.registered.Load()),
		Failed:               int(c.failed.Load()),
		PodsStarting:         int(c.podsStarting.Load()),
		PodsRunning:          int(c.podsRunning.Load()),
		PodsSucceeded:        c.podsSucceeded.Load(),
		PodsRejected:         c.podsRejected.Load(),
		PodsDeleted:          c.podsDeleted.Load(),
		PodUpdateErrors:      c.podUpdateErrors.Load(),
		Renewals:             c.renewals.Load(),
		RenewalErrors:        c.renewalErrors.Load(),
		Lateness:             s.lateness.snapshot(),
		NodeStatusUpdates:    c.statusUpdates.Load(),
		NodeStatusErrors:     c.statusErrors.Load(),
		GreedyLists:          c.greedyLists.Load(),
		GreedyListErrors:     c.greedyErrors.Load(),
		HeartbeatDispatchP99: s.heartbeats.dispatch.snapshot().Quantile(0.99),
		HeartbeatSaturated:   s.heartbeats.saturated.Load(),
		HeartbeatMaxBusy:     int(s.heartbeats.maxBusy.Load()),
		HeartbeatWorkers:     s.heartbeats.workers,
		PodDispatch:          s.podWork.dispatch.snapshot(),
		PodSaturated:         s.podWork.saturated.Load(),
		PodMaxBusy:           int(s.podWork.maxBusy.Load()),
		PodWorkers:           s.podWork.workers,
		PodWrite:             s.podWrites.snapshot(),
		ProxyProgramming:     s.proxyLatency.snapshot(),
	}
	if s.nodeDenied != nil {
		st.NodeRequestsDenied = s.nodeDenied.Load()
	}
	if d := s.proxyDecodes; d != nil {
		st.ProxyDecodes, st.ProxyDecodesShared = d.decodes.Load(), d.shared.Load()
	}
	st.LatenessP50 = st.Lateness.Quantile(0.5)
	st.LatenessP99 = st.Lateness.Quantile(0.99)
	st.LatenessMax = st.Lateness.Max
	gap := time.Duration(c.maxGap.Load())
	now := s.cfg.Clock.Now()
	if t := s.stopped.Load(); t != nil {
		now = *t
	}
	for _, n := range s.nodes {
		gap = max(gap, n.currentGap(now))
	}
	st.MaxRenewGap = gap
	if cpu, err := procstat.ReadCPU(procstat.Self); err == nil {
		st.CPUSeconds = cpu.Seconds()
	}
	if rss, _, err := procstat.ReadMemory(procstat.Self); err == nil {
		st.RSSBytes = uint64(rss)
	}
	return st
}

// observeGap records a gap between two acknowledged heartbeats of a node.
func (s *Sim) observeGap(d time.Duration) {
	for {
		m := s.counters.maxGap.Load()
		if int64(d) <= m || s.counters.maxGap.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// FailedNodes returns the names of the nodes that are failed now, sorted.
func (s *Sim) FailedNodes() []string {
	var out []string
	for _, n := range s.nodes {
		if n.isFailed() {
			out = append(out, n.name)
		}
	}
	sort.Strings(out)
	return out
}

// simClients builds the HTTP clients of rc's identity: one for the
// clientset's shared HTTP/2 connections and one for heartbeats (the same
// client with heartbeatsOverHTTP2). rc's Transport is set as a side
// effect, as the clientset built over the first client expects.
func simClients(rc *rest.Config, heartbeatsOverHTTP2 bool, conns int) (shared, beats *http.Client, err error) {
	beatRC := rc
	if rc.Transport == nil {
		if !heartbeatsOverHTTP2 {
			beatRC = rest.CopyConfig(rc)
			if err := withHeartbeatTransport(beatRC); err != nil {
				return nil, nil, err
			}
		}
		if err := withSharedConnTransport(rc, conns); err != nil {
			return nil, nil, err
		}
	}
	if shared, err = rest.HTTPClientFor(rc); err != nil {
		return nil, nil, fmt.Errorf("sim: building the HTTP client: %w", err)
	}
	beats = shared
	if beatRC != rc {
		if beats, err = rest.HTTPClientFor(beatRC); err != nil {
			return nil, nil, fmt.Errorf("sim: building the heartbeats' HTTP client: %w", err)
		}
	}
	return shared, beats, nil
}

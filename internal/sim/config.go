package sim

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// PodWatch says how hollow nodes learn about their pods.
type PodWatch string

const (
	// PodWatchPerNode is one list+watch per node with
	// fieldSelector=spec.nodeName=<node>, exactly as a kubelet does.
	PodWatchPerNode PodWatch = "per-node"
	// PodWatchShared is one list+watch of all bound pods for the whole
	// process, dispatched to nodes by spec.nodeName: far fewer watches, to
	// compare what per-node watches cost the server.
	PodWatchShared PodWatch = "shared"
)

// PodStep is a point in a pod's start at its hollow node (Config.PodObserver).
type PodStep int

const (
	// PodAdmitted: the node's watch delivered the pod and the node admitted it.
	PodAdmitted PodStep = iota
	// PodRunningWritten: the server acknowledged the pod's Running status.
	PodRunningWritten
)

// AnnotationRunSeconds on a pod makes its hollow node run it to Succeeded
// that many seconds (a decimal, e.g. "2.5") after it started. Pods owned by a
// Job without the annotation run for Config.JobRunTime.
const AnnotationRunSeconds = "sim.myriad.io/run-seconds"

// LabelHollowNode is set to "true" on every hollow Node, so tools can select
// (and clean up) simulated nodes.
const LabelHollowNode = "sim.myriad.io/hollow-node"

// Config says how many hollow nodes to run and how they behave. Zero values
// take the default given in each field's comment; New fills them in.
type Config struct {
	// RESTConfig reaches the API server. Required. It is copied: the
	// simulator sets protobuf content types and its own rate limits.
	RESTConfig *rest.Config
	// QPS and Burst limit the shared client; 0 means no client-side limit
	// (a real cluster's 10,000 kubelets each have their own budget).
	QPS   float32
	Burst int
	// HeartbeatsOverHTTP2 sends Lease renewals and Node status updates over
	// the clientset's shared HTTP/2 connections, as every other request. By
	// default they have their own keep-alive HTTP/1.1 connections
	// (client-go's transport with HTTP/2 turned off, as DISABLE_HTTP2 does;
	// at most 64, kept open): the same requests, but one TLS record and one
	// system call to send each instead of two, and no HTTP/2 framing
	// (docs/bench/sim.md, run 10).
	HeartbeatsOverHTTP2 bool
	// NodesPerConnection is how many nodes share one HTTP/2 connection
	// pool for their pod watches, pod writes and everything else but
	// heartbeats (default 50; the simulator's own requests use the
	// first). A kubelet has a connection of its own; one shared by all
	// the nodes put every watch event and status write through one
	// reader and one writer at each end (spreadConns).
	NodesPerConnection int
	// NodeIdentity is whom each node's requests act as (default
	// NodeIdentityImpersonate: system:node:<name>).
	NodeIdentity NodeIdentity
	// NodeTokens maps each node's name to its bearer token, required with
	// NodeIdentityToken (ReadNodeTokens reads them from a token file).
	NodeTokens map[string]string

	// Nodes is how many hollow nodes to run. Required (> 0).
	Nodes int
	// NamePrefix names the nodes <NamePrefix><index>; default "hollow-node-".
	NamePrefix string
	// FirstIndex is the index of the first node (default 0), so several
	// simulators can run side by side without overlapping names or IPs.
	FirstIndex int

	// Node shape. Defaults: 32 CPUs, 256Gi memory, 110 pods, 100Gi
	// ephemeral storage; allocatable equals capacity.
	CPU              resource.Quantity
	Memory           resource.Quantity
	Pods             int
	EphemeralStorage resource.Quantity
	// Labels are added to every node, on top of the well-known ones
	// (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch,
	// node.kubernetes.io/instance-type, topology.kubernetes.io/zone and
	// region, and LabelHollowNode).
	Labels map[string]string
	// Taints are set on every node at registration.
	Taints []corev1.Taint
	// Zones are spread over the nodes round-robin; default
	// sim-zone-a, sim-zone-b, sim-zone-c.
	Zones []string
	// InstanceType is node.kubernetes.io/instance-type; default "hollow.32xlarge".
	InstanceType string
	// StatusImages is how many container images each Node status lists
	// (about 300 bytes each). Default 0, or 50 with FullStatusHeartbeat
	// (about 15 KB, what a production node reports).
	StatusImages int

	// LeaseDuration is the Lease's leaseDurationSeconds; default 40s.
	LeaseDuration time.Duration
	// RenewInterval is how often each node renews its Lease; default 10s.
	RenewInterval time.Duration
	// NodeStatusInterval is how often Node status is written when nothing
	// changed; default 60s, as KEP-0009 and the Alibaba report describe the
	// Lease-based heartbeat (the kubelet's own nodeStatusReportFrequency
	// has since defaulted to 5m; set that here to compare).
	NodeStatusInterval time.Duration
	// FullStatusHeartbeat writes the whole Node status every RenewInterval
	// and no Lease: the heartbeat before KEP-0009, to show what Leases save.
	FullStatusHeartbeat bool

	// PodWatch chooses per-node watches (default) or one shared watch.
	PodWatch PodWatch
	// PodStartupDelay is how long after admission a pod turns Running;
	// default 1s. PodStartupJitter spreads it uniformly over
	// [delay-jitter, delay+jitter] (never below 0); default a fifth of
	// PodStartupDelay, negative for none. Real pods never start in lockstep,
	// and a fixed delay would make every pod of a burst turn Running in the
	// same instant, a write spike no real cluster sees.
	PodStartupDelay  time.Duration
	PodStartupJitter time.Duration
	// Seed seeds the startup jitter. Each node draws from its own generator
	// seeded with (Seed, node index), so a run's delays do not depend on
	// the order goroutines happen to run in. Default 0: a random seed
	// (New fills it in; Start logs it so a run can be repeated).
	Seed uint64
	// TerminationDelay is how long after containers are reported terminated
	// (on graceful deletion) the node confirms with a grace-0 delete, at most
	// the pod's grace period; default 1s.
	TerminationDelay time.Duration
	// JobRunTime is how long a Job's pod runs before it Succeeds, unless
	// AnnotationRunSeconds says otherwise; default 5s.
	JobRunTime time.Duration

	// UsageFraction is the share of its requests a running pod uses, as
	// the metrics API (Sim.MetricsAPIHandler) reports it, unless the pod's
	// AnnotationCPUUsage or AnnotationMemoryUsage says otherwise; default
	// 0.5, negative for none (usage 0).
	UsageFraction float64

	// Fail makes nodes fail by themselves, for node-lifecycle tests run from
	// the command line; default none. Programs can call Sim.Fail and
	// Sim.Recover (or serve Sim.ControlHandler) instead.
	Fail FailPlan

	// Kubelet serves the nodes' kubelet API (logs, exec, port-forward);
	// off by default.
	Kubelet KubeletConfig

	// GreedyListInterval > 0 makes every node list all Services (cluster
	// scope, a consistent read) every interval, spread evenly like renewals:
	// the Civis "greedy DaemonSet".
	GreedyListInterval time.Duration

	// Proxies runs a dry-run service proxy (internal/proxy) on the first
	// Proxies nodes, each with its own watches; ProxyMinSyncPeriod is their
	// batching period (default proxy.DefaultMinSyncPeriod).
	Proxies            int
	ProxyMinSyncPeriod time.Duration

	// Worker pools, one per class of work so none waits behind another.
	// HeartbeatWorkers defaults to enough for every heartbeat of a second
	// to be in flight at once (Nodes*1s/RenewInterval, at least 64): real
	// kubelets do not wait for each other, so a slow server must show up
	// as server latency, not as a queue in the simulator. Other defaults:
	// GreedyWorkers likewise (Nodes*1s/GreedyListInterval, at least 16);
	// PodWorkers one per node (at least 128), since every kubelet's status
	// manager writes its own pods' status without waiting for other
	// nodes': with a fixed 128, a server taking 300 ms per write capped
	// the whole cluster at about 400 pod starts a second and pods queued
	// in the simulator (docs/bench/loadtest.md, density's node steps);
	// 64 registration workers.
	HeartbeatWorkers    int
	PodWorkers          int
	GreedyWorkers       int
	RegistrationWorkers int

	// PodObserver, if set, is told when a node admits a pod (its watch
	// delivered the pod and the startup delay begins: PodAdmitted) and
	// when the server acknowledged the pod's Running status
	// (PodRunningWritten), at the simulator clock's time. It is called
	// with no lock held, from the watch and pod worker goroutines, so it
	// must be safe for concurrent use and quick. The load tests use it to
	// split a pod's startup at the node on their own clock.
	PodObserver func(step PodStep, namespace, name string, at time.Time)

	// Logger receives the simulator's logs; default discards them.
	Logger *slog.Logger
	// Metrics, if set, receives the simulator's metrics (prefix myriad_sim_)
	// and a process collector (CPU, RSS) unless one is registered already.
	Metrics prometheus.Registerer
	// Clock drives every timer; default the real clock. Tests inject a fake.
	Clock clock.Clock
}

const (
	defaultPrefix = "hollow-node-"
)

// FailPlan fails some nodes a while after they have all registered — their
// Leases and Node status go stale, so the node lifecycle controller marks
// them NotReady and evicts their pods — and optionally brings them back.
// Count and Nodes are alternatives; both zero means no plan.
type FailPlan struct {
	// Count fails the first Count nodes by index (<NamePrefix><FirstIndex>
	// onwards), so which nodes fail is predictable. At most Nodes.
	Count int
	// Nodes names the nodes to fail; each must be one of this simulator's.
	Nodes []string
	// After is how long after Start returns (every node registered) the
	// nodes fail; default 0, at once.
	After time.Duration
	// RecoverAfter, if > 0, recovers the nodes that long after they failed;
	// default 0, they stay failed.
	RecoverAfter time.Duration
}

// ParseFailNodes reads a node selection as the command line gives it: a
// bare number is a count (the first N nodes), anything else a
// comma-separated list of node names. Empty means none.
func ParseFailNodes(v string) (count int, names []string, err error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, nil, nil
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0, nil, fmt.Errorf("sim: node count must not be negative, got %d", n)
		}
		return n, nil, nil
	}
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	return 0, names, nil
}

// validate checks the plan against a config with defaults filled in; names
// are checked against the nodes in newSim.
func (p FailPlan) validate(nodes int) error {
	switch {
	case p.Count < 0 || p.Count > nodes:
		return fmt.Errorf("sim: Fail.Count must be in 0..%d (Nodes), got %d", nodes, p.Count)
	case p.Count > 0 && len(p.Nodes) > 0:
		return errors.New("sim: Fail.Count and Fail.Nodes are alternatives; set one")
	case p.After < 0 || p.RecoverAfter < 0:
		return fmt.Errorf("sim: Fail.After and Fail.RecoverAfter must not be negative, got %v and %v", p.After, p.RecoverAfter)
	}
	return nil
}

// connPools is how many connection pools the nodes spread over.
func (cfg Config) connPools() int {
	return (cfg.Nodes + cfg.NodesPerConnection - 1) / cfg.NodesPerConnection
}

// withDefaults returns cfg with every zero field set to its default, or an
// error if cfg cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.RESTConfig == nil {
		return cfg, errors.New("sim: RESTConfig is required")
	}
	if cfg.Nodes <= 0 {
		return cfg, fmt.Errorf("sim: Nodes must be positive, got %d", cfg.Nodes)
	}
	if cfg.FirstIndex < 0 {
		return cfg, fmt.Errorf("sim: FirstIndex must not be negative, got %d", cfg.FirstIndex)
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix = defaultPrefix
	}
	switch cfg.NodeIdentity {
	case "":
		cfg.NodeIdentity = NodeIdentityImpersonate
	case NodeIdentityImpersonate, NodeIdentitySelf:
	case NodeIdentityToken:
		for i := range cfg.Nodes {
			name := cfg.NamePrefix + strconv.Itoa(cfg.FirstIndex+i)
			if cfg.NodeTokens[name] == "" {
				return cfg, fmt.Errorf("sim: NodeIdentity %q: no token for node %s", NodeIdentityToken, name)
			}
		}
	default:
		return cfg, fmt.Errorf("sim: NodeIdentity must be %q, %q or %q, got %q", NodeIdentityImpersonate, NodeIdentityToken, NodeIdentitySelf, cfg.NodeIdentity)
	}
	if cfg.CPU.IsZero() {
		cfg.CPU = resource.MustParse("32")
	}
	if cfg.Memory.IsZero() {
		cfg.Memory = resource.MustParse("256Gi")
	}
	if cfg.Pods == 0 {
		cfg.Pods = 110
	}
	if cfg.Pods < 0 || cfg.Pods > maxPodsPerNode {
		return cfg, fmt.Errorf("sim: Pods must be in 1..%d, got %d", maxPodsPerNode, cfg.Pods)
	}
	if cfg.FirstIndex+cfg.Nodes > maxNodes(cfg.Pods) {
		return cfg, fmt.Errorf("sim: at most %d nodes with %d pods each fit the 10.0.0.0/8 pod network", maxNodes(cfg.Pods), cfg.Pods)
	}
	if cfg.EphemeralStorage.IsZero() {
		cfg.EphemeralStorage = resource.MustParse("100Gi")
	}
	if len(cfg.Zones) == 0 {
		cfg.Zones = []string{"sim-zone-a", "sim-zone-b", "sim-zone-c"}
	}
	if cfg.InstanceType == "" {
		cfg.InstanceType = "hollow.32xlarge"
	}
	if cfg.StatusImages == 0 && cfg.FullStatusHeartbeat {
		cfg.StatusImages = 50
	}
	if cfg.StatusImages < 0 {
		return cfg, fmt.Errorf("sim: StatusImages must not be negative, got %d", cfg.StatusImages)
	}
	setDur := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	setDur(&cfg.LeaseDuration, 40*time.Second)
	setDur(&cfg.RenewInterval, 10*time.Second)
	setDur(&cfg.NodeStatusInterval, time.Minute)
	setDur(&cfg.PodStartupDelay, time.Second)
	// Negative jitter means none and is kept as it is, so that filling in
	// defaults twice changes nothing.
	setDur(&cfg.PodStartupJitter, cfg.PodStartupDelay/5)
	setDur(&cfg.TerminationDelay, time.Second)
	setDur(&cfg.JobRunTime, 5*time.Second)
	// Negative (none) is kept, like PodStartupJitter.
	if cfg.UsageFraction == 0 {
		cfg.UsageFraction = 0.5
	}
	for name, d := range map[string]time.Duration{
		"LeaseDuration": cfg.LeaseDuration, "RenewInterval": cfg.RenewInterval,
		"NodeStatusInterval": cfg.NodeStatusInterval, "PodStartupDelay": cfg.PodStartupDelay,
		"TerminationDelay": cfg.TerminationDelay, "JobRunTime": cfg.JobRunTime,
		"GreedyListInterval": cfg.GreedyListInterval,
	} {
		if d < 0 {
			return cfg, fmt.Errorf("sim: %s must not be negative, got %v", name, d)
		}
	}
	if cfg.LeaseDuration < time.Second {
		return cfg, fmt.Errorf("sim: LeaseDuration must be at least 1s, got %v", cfg.LeaseDuration)
	}
	switch cfg.PodWatch {
	case "":
		cfg.PodWatch = PodWatchPerNode
	case PodWatchPerNode, PodWatchShared:
	default:
		return cfg, fmt.Errorf("sim: unknown PodWatch %q (want %q or %q)", cfg.PodWatch, PodWatchPerNode, PodWatchShared)
	}
	setInt := func(n *int, def int) {
		if *n <= 0 {
			*n = def
		}
	}
	// perSecond is how many of Nodes' periodic tasks fall due in a second.
	perSecond := func(period time.Duration) int {
		if period <= 0 {
			return 0
		}
		return int((int64(cfg.Nodes)*int64(time.Second) + int64(period) - 1) / int64(period))
	}
	setInt(&cfg.HeartbeatWorkers, max(64, perSecond(cfg.RenewInterval)))
	setInt(&cfg.PodWorkers, max(128, cfg.Nodes))
	setInt(&cfg.GreedyWorkers, max(16, perSecond(cfg.GreedyListInterval)))
	setInt(&cfg.RegistrationWorkers, 64)
	setInt(&cfg.NodesPerConnection, 50)
	if err := cfg.Kubelet.withDefaults(); err != nil {
		return cfg, err
	}
	if err := cfg.Fail.validate(cfg.Nodes); err != nil {
		return cfg, err
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return cfg, nil
}

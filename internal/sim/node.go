package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"sync"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// node is one hollow node. Its lock guards the fields in mu; the immutable
// fields above it are set by newNode.
type node struct {
	s      *Sim
	local  int // position in Sim.nodes: the node's slot on every schedule grid
	index  int // global index: FirstIndex + local; decides IPs and zone
	name   string
	cidr   netip.Prefix
	hostIP string
	// identity is the node's impersonation headers; nil when its requests
	// go as the simulator (Config.NodeIdentity).
	identity *nodeHeaders

	mu struct {
		sync.Mutex
		registered bool
		failed     bool
		// epoch changes on every Fail and Recover, so work scheduled before
		// can tell it is stale.
		epoch       int
		obj         *corev1.Node // last Node the server returned
		lease       *coordv1.Lease
		lastAck     time.Time // last acknowledged heartbeat; zero while failed
		lastStatus  time.Time // last acknowledged Node status write (or registration)
		transitions map[corev1.NodeConditionType]time.Time
		pods        map[types.UID]*podState
		ips         *ipPool
		used        usage
		stopWatch   context.CancelFunc // per-node pod watch
		// rng draws pod startup jitter; one per node, seeded with
		// (Config.Seed, index), so the draws are reproducible whatever
		// order nodes' work runs in.
		rng *rand.Rand
	}
}

func newNode(s *Sim, local int) *node {
	idx := s.cfg.FirstIndex + local
	n := &node{
		s:      s,
		local:  local,
		index:  idx,
		name:   s.cfg.NamePrefix + strconv.Itoa(idx),
		cidr:   podCIDR(idx, s.cfg.Pods),
		hostIP: hostIP(idx).String(),
	}
	switch s.cfg.NodeIdentity {
	case NodeIdentityImpersonate:
		n.identity = newNodeHeaders(n.name, local/s.cfg.NodesPerConnection)
	case NodeIdentityToken:
		n.identity = newNodeTokenHeaders(s.cfg.NodeTokens[n.name], local/s.cfg.NodesPerConnection)
	}
	n.mu.pods = map[types.UID]*podState{}
	n.mu.ips = newIPPool(n.cidr, s.cfg.Pods)
	n.mu.transitions = map[corev1.NodeConditionType]time.Time{}
	n.mu.rng = rand.New(rand.NewPCG(s.cfg.Seed, uint64(idx)))
	return n
}

// slot is the first time at or after t on this node's grid for period:
// start + local*period/N + k*period.
func (n *node) slot(t time.Time, period time.Duration) time.Time {
	start := n.s.start
	offset := time.Duration(int64(period) * int64(n.local) / int64(len(n.s.nodes)))
	first := start.Add(offset)
	if !t.After(first) {
		return first
	}
	k := (t.Sub(first) + period - 1) / period
	return first.Add(k * period)
}

func (n *node) isFailed() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.failed
}

// currentGap is how long the node has waited for a heartbeat ack, if it is
// registered and not failed.
func (n *node) currentGap(now time.Time) time.Duration {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.failed || n.mu.lastAck.IsZero() {
		return 0
	}
	return now.Sub(n.mu.lastAck)
}

// acked records an acknowledged heartbeat at now.
func (n *node) acked(now time.Time) {
	n.mu.Lock()
	last := n.mu.lastAck
	if !n.mu.failed {
		n.mu.lastAck = now
	}
	n.mu.Unlock()
	if !last.IsZero() {
		n.s.observeGap(now.Sub(last))
	}
}

// register creates the node's Node (or adopts an existing one) and Lease,
// then puts its periodic work on the schedulers and starts its pod watch.
func (n *node) register(ctx context.Context) error {
	ctx = n.as(ctx)
	var err error
	for attempt := range 5 {
		if err = n.registerOnce(ctx); err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n.s.cfg.Logger.Warn("registering hollow node", "node", n.name, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.s.cfg.Clock.After(time.Duration(attempt+1) * time.Second):
		}
	}
	if err != nil {
		return fmt.Errorf("sim: registering node %s: %w", n.name, err)
	}
	now := n.s.cfg.Clock.Now()
	n.mu.Lock()
	n.mu.registered = true
	n.mu.lastAck = now
	n.mu.Unlock()
	n.s.counters.registered.Add(1)

	// Registration wrote the Node (and Lease): the first periodic write is
	// the node's first grid slot at least half a period later, so the first
	// gap is between half a period and one and a half.
	cfg := &n.s.cfg
	first := func(period time.Duration) time.Time { return n.slot(now.Add(period/2), period) }
	if cfg.FullStatusHeartbeat {
		n.s.heartbeats.at(first(cfg.RenewInterval), n.fullStatusTask)
	} else {
		n.s.heartbeats.at(first(cfg.RenewInterval), n.renewTask)
		n.s.heartbeats.at(first(cfg.NodeStatusInterval), n.statusTask)
	}
	if cfg.GreedyListInterval > 0 {
		n.s.greedy.at(n.slot(now, cfg.GreedyListInterval), n.greedyTask)
	}
	if cfg.PodWatch == PodWatchPerNode && !n.s.noPodWatch {
		n.startWatch(ctx)
	}
	return nil
}

func (n *node) registerOnce(ctx context.Context) error {
	if err := n.ensureNode(ctx); err != nil {
		return err
	}
	if n.s.cfg.FullStatusHeartbeat {
		return nil
	}
	return n.ensureLease(ctx)
}

// fail stops the node's heartbeats and pod handling.
func (n *node) fail() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.failed {
		return
	}
	n.mu.failed = true
	n.mu.epoch++
	n.mu.lastAck = time.Time{}
	if n.mu.stopWatch != nil {
		n.mu.stopWatch()
		n.mu.stopWatch = nil
	}
	n.s.counters.failed.Add(1)
}

// recover undoes fail: an immediate heartbeat and status write, and a fresh
// look at the node's pods.
func (n *node) recover(ctx context.Context) {
	ctx = n.as(ctx)
	n.mu.Lock()
	if !n.mu.failed {
		n.mu.Unlock()
		return
	}
	n.mu.failed = false
	n.mu.epoch++
	n.mu.lastAck = n.s.cfg.Clock.Now()
	registered := n.mu.registered
	for _, st := range n.mu.pods {
		n.resumeLocked(st)
	}
	n.mu.Unlock()
	n.s.counters.failed.Add(-1)
	if !registered {
		return
	}
	now := n.s.cfg.Clock.Now()
	if n.s.cfg.FullStatusHeartbeat {
		n.s.heartbeats.at(now, func(time.Time) { n.writeStatus(ctx, true) })
	} else {
		n.s.heartbeats.at(now, func(due time.Time) {
			if !n.renew(ctx, due) {
				n.retryHeartbeat(due, n.next(due, n.s.cfg.RenewInterval), 0, n.renew)
			}
		})
		n.s.heartbeats.at(now, func(time.Time) { n.writeStatus(ctx, false) })
	}
	switch {
	case n.s.noPodWatch:
	case n.s.cfg.PodWatch == PodWatchPerNode:
		n.startWatch(ctx)
	default:
		n.s.wg.Add(1)
		go func() {
			defer n.s.wg.Done()
			n.relist(ctx)
		}()
	}
}

// runCtx is the simulator's run context (set before any node work runs),
// carrying the node's identity.
func (n *node) runCtx() context.Context {
	n.s.mu.Lock()
	ctx := n.s.mu.ctx
	n.s.mu.Unlock()
	return n.as(ctx)
}

// as marks ctx's requests as the node's own (see NodeIdentity).
func (n *node) as(ctx context.Context) context.Context {
	if n.identity == nil {
		return ctx
	}
	return withNodeIdentity(ctx, n.identity)
}

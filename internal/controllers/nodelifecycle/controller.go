package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// Name is the controller's name in --controllers.
const Name = "nodelifecycle"

// LeaseNamespace holds the nodes' heartbeat Leases.
const LeaseNamespace = corev1.NamespaceNodeLease

// podNodeIndex indexes pods by spec.nodeName on the shared pod informer.
const podNodeIndex = "nodelifecycle-node"

// taintPassEvery is how often queued NoExecute taints are applied
// (subject to the zone's rate), upstream's nodeEvictionPeriod;
// evictPassEvery how often pods on tainted nodes are checked.
const (
	taintPassEvery = 100 * time.Millisecond
	evictPassEvery = time.Second
)

// Descriptor registers the controller with default options; the manager
// rebuilds New with its configured Options.
func Descriptor() controllerctx.Descriptor {
	return controllerctx.Descriptor{Name: Name, Workers: 1, New: func(c *controllerctx.Context) (controllerctx.Controller, error) { return New(c, Options{}) }}
}

// health is what the controller last observed of a node's heartbeat, in
// its own clock: a Lease renewTime or Ready heartbeat that changed since
// the last look means the node was alive at the moment we saw it change
// (so clock skew between nodes and controller does not matter).
type health struct {
	renewTime time.Time // lease spec.renewTime last seen
	heartbeat time.Time // Ready condition lastHeartbeatTime last seen
	probeTime time.Time // our clock when either last changed
}

// Controller is the node lifecycle controller.
type Controller struct {
	opts     Options
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	clock    clock.WithTicker
	log      *slog.Logger
	recorder record.EventRecorder

	mu struct {
		sync.Mutex
		health map[string]*health
		// zones tracks each zone's disruption state and pending taints.
		zones map[string]*zone
		// taintSeen: when each NoExecute taint was first seen (see dateTaints).
		taintSeen map[string]time.Time
		// fullDisruption: every zone is fully disrupted (likely the
		// controller's own network): evictions are stopped.
		fullDisruption bool
	}
}

// New registers the node, lease and pod informers.
func New(c *controllerctx.Context, opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	nodeInf := c.Informers.Core().V1().Nodes()
	leaseInf := c.Informers.Coordination().V1().Leases()
	podInf := c.Informers.Core().V1().Pods()
	if err := reconcile.AddIndexers(podInf.Informer(), cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("%s: pod index: %w", Name, err)
	}
	ctrl := &Controller{
		opts:   opts,
		client: c.Client,
		nodes:  nodeInf.Lister(),
		leases: leaseInf.Lister(),
		pods:   podInf.Informer().GetIndexer(),
		synced: []cache.InformerSynced{nodeInf.Informer().HasSynced, leaseInf.Informer().HasSynced, podInf.Informer().HasSynced},
		clock:  c.Clock,
		log:    c.Logger.With("controller", Name),
	}
	if c.Events != nil {
		ctrl.recorder = c.Events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-controller"})
	}
	ctrl.mu.health = map[string]*health{}
	ctrl.mu.zones = map[string]*zone{}
	ctrl.mu.taintSeen = map[string]time.Time{}
	return ctrl, nil
}

// Run waits for the caches, then monitors node health every MonitorPeriod
// applies queued taints every 100 ms and evicts due pods every second,
// until ctx is done.
func (c *Controller) Run(ctx context.Context, _ int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	// A new leader gives every node a fresh grace period: it cannot know
	// how long ago a Lease it first sees was renewed by its own clock.
	monitor := c.clock.NewTicker(c.opts.MonitorPeriod)
	defer monitor.Stop()
	pass := c.clock.NewTicker(taintPassEvery)
	defer pass.Stop()
	evict := c.clock.NewTicker(evictPassEvery)
	defer evict.Stop()
	c.monitor(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-monitor.C():
			c.monitor(ctx)
		case <-pass.C():
			c.taintPass(ctx)
		case <-evict.C():
			c.evictPass(ctx)
		}
	}
}

// observe updates the node's health record and returns the time of its
// last observed heartbeat (in our clock).
func (c *Controller) observe(node *corev1.Node, lease *coordinationv1.Lease, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.mu.health[node.Name]
	var renew, beat time.Time
	if lease != nil && lease.Spec.RenewTime != nil {
		renew = lease.Spec.RenewTime.Time
	}
	if _, cond := readyCondition(node); cond != nil {
		beat = cond.LastHeartbeatTime.Time
	}
	if h == nil {
		h = &health{renewTime: renew, heartbeat: beat, probeTime: now}
		c.mu.health[node.Name] = h
		return now
	}
	if !renew.Equal(h.renewTime) || !beat.Equal(h.heartbeat) {
		h.renewTime, h.heartbeat, h.probeTime = renew, beat, now
	}
	return h.probeTime
}

// forget drops nodes that no longer exist.
func (c *Controller) forget(seen map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name := range c.mu.health {
		if !seen[name] {
			delete(c.mu.health, name)
		}
	}
	for k := range c.mu.taintSeen {
		if !seen[strings.SplitN(k, "\x00", 2)[0]] {
			delete(c.mu.taintSeen, k)
		}
	}
	for _, z := range c.mu.zones {
		for name := range z.pending {
			if !seen[name] {
				delete(z.pending, name)
			}
		}
	}
}

func readyCondition(node *corev1.Node) (int, *corev1.NodeCondition) {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return i, &node.Status.Conditions[i]
		}
	}
	return -1, nil
}

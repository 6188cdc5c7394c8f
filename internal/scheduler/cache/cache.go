package cache

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// podState is where the cache has a pod.
type podState struct {
	info    *framework.PodInfo
	node    string
	assumed bool
	// deadline is when an assumed pod whose binding finished expires if its
	// confirmation has not arrived; zero while binding is in flight.
	deadline time.Time
}

// Cache holds nodes and pods. Methods are safe for concurrent use.
type Cache struct {
	ttl time.Duration

	// mu guards everything below. Readers (a scheduling cycle) hold it for
	// reading while they filter and score; informer handlers and Assume
	// hold it for writing.
	mu struct {
		sync.RWMutex
		nodes map[string]*framework.NodeInfo
		// list holds the nodes that have a Node object, in a stable order
		// the search's rotating offset walks.
		list []*framework.NodeInfo
		pods map[types.UID]*podState
		// podsWithAffinity counts pods with any pod (anti-)affinity term,
		// so the inter-pod affinity plugins can skip work when none exist.
		podsWithAffinity int
		generation       int64
	}
}

// New returns an empty cache; assumed pods expire ttl after their binding
// finished without confirmation (default 15 minutes, upstream's
// durationToExpireAssumedPod: expiring early would free the room while the
// confirmation is merely late, and over-commit the node).
func New(ttl time.Duration) *Cache {
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	c := &Cache{ttl: ttl}
	c.mu.nodes = map[string]*framework.NodeInfo{}
	c.mu.pods = map[types.UID]*podState{}
	return c
}

// Snapshot is a read-only view valid while the cache's read lock is held
// (inside View).
type Snapshot struct {
	c *Cache
}

// Nodes returns the schedulable node list in stable order. Callers must not
// modify it or the NodeInfos.
func (s Snapshot) Nodes() []*framework.NodeInfo { return s.c.mu.list }

// Node returns the named node or nil.
func (s Snapshot) Node(name string) *framework.NodeInfo {
	n := s.c.mu.nodes[name]
	if n == nil || n.Node == nil {
		return nil
	}
	return n
}

// HavePodsWithAffinity reports whether any pod in the cluster has a pod
// (anti-)affinity term.
func (s Snapshot) HavePodsWithAffinity() bool { return s.c.mu.podsWithAffinity > 0 }

// Generation increases with every change to the cache.
func (s Snapshot) Generation() int64 { return s.c.mu.generation }

// View runs fn with the cache read-locked. fn must not call other Cache
// methods.
func (c *Cache) View(fn func(Snapshot)) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	fn(Snapshot{c: c})
}

// nodeLocked returns the NodeInfo for name, creating a placeholder.
func (c *Cache) nodeLocked(name string) *framework.NodeInfo {
	n, ok := c.mu.nodes[name]
	if !ok {
		n = framework.NewNodeInfo(name)
		c.mu.nodes[name] = n
	}
	return n
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeLocked(node.Name)
	n.SetNode(node)
	if n.Index < 0 {
		n.Index = len(c.mu.list)
		c.mu.list = append(c.mu.list, n)
	}
	c.mu.generation++
}

// UpdateNode is AddNode.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode removes a node. Its pods stay accounted to a placeholder until
// they are deleted, as upstream does.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.mu.nodes[name]
	if !ok {
		return
	}
	if n.Index >= 0 {
		last := len(c.mu.list) - 1
		c.mu.list[n.Index] = c.mu.list[last]
		c.mu.list[n.Index].Index = n.Index
		c.mu.list[last] = nil
		c.mu.list = c.mu.list[:last]
		n.Index = -1
	}
	n.Node = nil
	if len(n.Pods) == 0 {
		delete(c.mu.nodes, name)
	}
	c.mu.generation++
}

// AssumePod counts pi on node before the binding is confirmed.
func (c *Cache) AssumePod(pi *framework.PodInfo, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.mu.pods[pi.Pod.UID]; ok {
		return fmt.Errorf("assume pod %s: already in the cache", pi.Key())
	}
	c.addPodLocked(pi, node)
	c.mu.pods[pi.Pod.UID].assumed = true
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod whose binding call
// returned successfully.
func (c *Cache) FinishBinding(pod *v1.Pod, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.mu.pods[pod.UID]; ok && ps.assumed {
		ps.deadline = now.Add(c.ttl)
	}
}

// ForgetPod drops an assumed pod (its binding failed).
func (c *Cache) ForgetPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.mu.pods[pod.UID]; ok && ps.assumed {
		c.removePodLocked(pod.UID, ps)
	}
}

// IsAssumed reports whether pod is assumed and not yet confirmed.
func (c *Cache) IsAssumed(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.mu.pods[pod.UID]
	return ok && ps.assumed
}

// AddPod records a pod the API reports bound; it confirms an assumption.
func (c *Cache) AddPod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.mu.pods[pod.UID]; ok {
		// Confirmation, or a re-list: replace the entry with the API's copy,
		// keeping the node the API says.
		c.removePodLocked(pod.UID, ps)
	}
	c.addPodLocked(framework.NewPodInfo(pod), pod.Spec.NodeName)
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(pod *v1.Pod) { c.AddPod(pod) }

// RemovePod drops a pod (deleted, or finished: terminal pods free their
// room, as upstream's cache drops them).
func (c *Cache) RemovePod(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.mu.pods[pod.UID]; ok {
		c.removePodLocked(pod.UID, ps)
	}
}

// Cleanup expires assumed pods whose confirmation is overdue and returns
// how many it dropped.
func (c *Cache) Cleanup(now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for uid, ps := range c.mu.pods {
		if ps.assumed && !ps.deadline.IsZero() && now.After(ps.deadline) {
			c.removePodLocked(uid, ps)
			n++
		}
	}
	return n
}

// PodCount returns how many pods the cache holds (bound and assumed).
func (c *Cache) PodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.mu.pods)
}

// NodeCount returns how many nodes have a Node object.
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.mu.list)
}

func (c *Cache) addPodLocked(pi *framework.PodInfo, node string) {
	n := c.nodeLocked(node)
	n.AddPod(pi)
	c.mu.pods[pi.Pod.UID] = &podState{info: pi, node: node}
	if pi.HasAffinity() {
		c.mu.podsWithAffinity++
	}
	c.mu.generation++
}

func (c *Cache) removePodLocked(uid types.UID, ps *podState) {
	if n, ok := c.mu.nodes[ps.node]; ok {
		n.RemovePod(uid)
		if n.Node == nil && len(n.Pods) == 0 {
			delete(c.mu.nodes, ps.node)
		}
	}
	if ps.info.HasAffinity() {
		c.mu.podsWithAffinity--
	}
	delete(c.mu.pods, uid)
	c.mu.generation++
}

// AssumeIf assumes pi on node if check, run on the node under the write
// lock, accepts it: the re-check and the assumption are atomic with respect
// to informer updates, so a decision made on a read view never
// over-commits a node that changed meanwhile.
func (c *Cache) AssumeIf(pi *framework.PodInfo, node string, check func(*framework.NodeInfo) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.mu.nodes[node]
	if !ok || n.Node == nil {
		return false
	}
	if _, ok := c.mu.pods[pi.Pod.UID]; ok {
		return false
	}
	if !check(n) {
		return false
	}
	c.addPodLocked(pi, node)
	c.mu.pods[pi.Pod.UID].assumed = true
	return true
}

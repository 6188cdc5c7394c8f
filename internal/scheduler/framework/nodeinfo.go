package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeInfo is a node and the pods bound or assumed to it, with the sums the
// filters and scores read. It is not safe for concurrent mutation; the cache
// guards it.
type NodeInfo struct {
	// Node is nil while pods are known to be bound to a node the cache has
	// not seen yet (upstream's "imaginary" node); such nodes are never
	// candidates.
	Node        *v1.Node
	Name        string
	Allocatable Resource
	// Requested sums Requests of Pods; NonZero* sum what scoring counts.
	Requested                      Resource
	NonZeroMilliCPU, NonZeroMemory int64
	Pods                           []*PodInfo
	// PodsWithAffinity lists pods with any pod (anti-)affinity term (their
	// terms score every incoming pod they match, as upstream);
	// PodsWithRequiredAntiAffinity lists those whose required anti-affinity
	// every incoming pod must respect.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPortSet
	// Generation increases on every change, so holders of derived data
	// (equivalence-class scores) can tell a node changed.
	Generation int64
	// Index is the node's position in the cache's node list.
	Index int

	// Copies of the node fields every filter reads, kept here so the
	// filter loop does not chase into the large Node object per node.
	Unschedulable bool
	// FilterTaints are the NoSchedule/NoExecute taints, in node order, with
	// the failure status naming each (upstream's message), built once.
	FilterTaints  []v1.Taint
	TaintStatuses []*Status
	// PreferTaints are the PreferNoSchedule taints, for scoring.
	PreferTaints []v1.Taint

	podIndex map[types.UID]int
}

// NewNodeInfo returns an empty NodeInfo for name.
func NewNodeInfo(name string) *NodeInfo {
	return &NodeInfo{Name: name, podIndex: map[types.UID]int{}, Index: -1}
}

// SetNode records the node object and its allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.Node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Unschedulable = node.Spec.Unschedulable
	n.FilterTaints, n.TaintStatuses, n.PreferTaints = nil, nil, nil
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectPreferNoSchedule {
			n.PreferTaints = append(n.PreferTaints, t)
		}
		if t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute {
			n.FilterTaints = append(n.FilterTaints, t)
			n.TaintStatuses = append(n.TaintStatuses, NewStatus(UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value)))
		}
	}
	n.Generation++
}

// AddPod adds pi's requests, ports and affinity to n.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.podIndex[pi.Pod.UID] = len(n.Pods)
	n.Pods = append(n.Pods, pi)
	n.Requested.Add(&pi.Requests)
	n.NonZeroMilliCPU += pi.NonZeroMilliCPU
	n.NonZeroMemory += pi.NonZeroMemory
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinity) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	for _, p := range pi.HostPorts {
		n.UsedPorts.Add(p)
	}
	n.Generation++
}

// RemovePod removes the pod with uid and reports whether it was there.
func (n *NodeInfo) RemovePod(uid types.UID) (*PodInfo, bool) {
	i, ok := n.podIndex[uid]
	if !ok {
		return nil, false
	}
	pi := n.Pods[i]
	last := len(n.Pods) - 1
	n.Pods[i] = n.Pods[last]
	n.podIndex[n.Pods[i].Pod.UID] = i
	n.Pods[last] = nil
	n.Pods = n.Pods[:last]
	delete(n.podIndex, uid)
	n.Requested.Sub(&pi.Requests)
	n.NonZeroMilliCPU -= pi.NonZeroMilliCPU
	n.NonZeroMemory -= pi.NonZeroMemory
	if pi.HasAffinity() {
		n.PodsWithAffinity = removePodInfo(n.PodsWithAffinity, uid)
	}
	if len(pi.RequiredAntiAffinity) > 0 {
		n.PodsWithRequiredAntiAffinity = removePodInfo(n.PodsWithRequiredAntiAffinity, uid)
	}
	for _, p := range pi.HostPorts {
		n.UsedPorts.Remove(p)
	}
	n.Generation++
	return pi, true
}

// removePodInfo removes the pod with uid from list in place, keeping the
// order. Clone copies the lists, so no other NodeInfo shares the array.
func removePodInfo(list []*PodInfo, uid types.UID) []*PodInfo {
	for j, p := range list {
		if p.Pod.UID == uid {
			copy(list[j:], list[j+1:])
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

// Clone returns a copy that can be changed (preemption's what-if) without
// touching n.
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		Node: n.Node, Name: n.Name, Allocatable: n.Allocatable,
		Unschedulable: n.Unschedulable, FilterTaints: n.FilterTaints, TaintStatuses: n.TaintStatuses, PreferTaints: n.PreferTaints,
		Requested: n.Requested.Clone(), NonZeroMilliCPU: n.NonZeroMilliCPU, NonZeroMemory: n.NonZeroMemory,
		Pods:                         append([]*PodInfo(nil), n.Pods...),
		PodsWithAffinity:             append([]*PodInfo(nil), n.PodsWithAffinity...),
		PodsWithRequiredAntiAffinity: append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...),
		UsedPorts:                    n.UsedPorts.Clone(),
		Generation:                   n.Generation,
		Index:                        n.Index,
		podIndex:                     make(map[types.UID]int, len(n.podIndex)),
	}
	for k, v := range n.podIndex {
		c.podIndex[k] = v
	}
	return c
}

// HostPortSet counts host ports in use, by protocol, IP and port.
type HostPortSet map[hostPortKey]int

type hostPortKey struct {
	protocol v1.Protocol
	ip       string
	port     int32
}

func keyOf(p v1.ContainerPort) hostPortKey {
	proto := p.Protocol
	if proto == "" {
		proto = v1.ProtocolTCP
	}
	ip := p.HostIP
	if ip == "" {
		ip = "0.0.0.0"
	}
	return hostPortKey{protocol: proto, ip: ip, port: p.HostPort}
}

// Add records p in use.
func (s *HostPortSet) Add(p v1.ContainerPort) {
	if *s == nil {
		*s = HostPortSet{}
	}
	(*s)[keyOf(p)]++
}

// Remove releases p.
func (s HostPortSet) Remove(p v1.ContainerPort) {
	k := keyOf(p)
	if s[k] <= 1 {
		delete(s, k)
		return
	}
	s[k]--
}

// Conflicts reports whether p clashes with a port in use: same protocol and
// port, and the same IP or either side on 0.0.0.0 (upstream's NodePorts).
func (s HostPortSet) Conflicts(p v1.ContainerPort) bool {
	if len(s) == 0 {
		return false
	}
	k := keyOf(p)
	if k.ip == "0.0.0.0" {
		for u := range s {
			if u.protocol == k.protocol && u.port == k.port {
				return true
			}
		}
		return false
	}
	if s[k] > 0 {
		return true
	}
	k.ip = "0.0.0.0"
	return s[k] > 0
}

// Clone copies s.
func (s HostPortSet) Clone() HostPortSet {
	if s == nil {
		return nil
	}
	c := make(HostPortSet, len(s))
	for k, v := range s {
		c[k] = v
	}
	return c
}

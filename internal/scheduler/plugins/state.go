package plugins

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// Score weights of upstream's default profile.
const (
	WeightLeastAllocated     = 1
	WeightBalanced           = 1
	WeightNodeAffinity       = 2
	WeightTaintToleration    = 3
	WeightInterPodAffinity   = 2
	WeightPodTopologySpread  = 2
	MaxNodeScore             = 100
	unschedulableTaintKey    = v1.TaintNodeUnschedulable
	enableComparisonOperator = false
)

// State is what PreFilter computed for one pod; Filter and the scores read
// it. It is immutable after PreFilter, so filters may run in parallel.
type State struct {
	Pod *framework.PodInfo

	nodeAffinity nodeaffinity.RequiredNodeAffinity
	preferred    *nodeaffinity.PreferredSchedulingTerms

	affinity *affinityState
	spread   *spreadState
	// softSpread holds ScheduleAnyway constraints' counts, for scoring.
	softSpread *spreadState
	// volumes is VolumeBinding's state, nil for pods without claims.
	volumes *volumeState

	// Nominated holds, per node, the requests of pods nominated there
	// (by preemption) with priority at least the pod's; they count as
	// if placed, as upstream's nominated-pod pass does for resources.
	Nominated map[string]*framework.Resource
}

// Cluster is what PreFilter reads beyond the pod: every node, and whether
// any pod has pod (anti-)affinity (to skip that work when none does).
type Cluster interface {
	Nodes() []*framework.NodeInfo
	HavePodsWithAffinity() bool
}

// PreFilter prepares pod's State. A non-nil status means the pod cannot be
// scheduled anywhere (for instance, an invalid selector).
func PreFilter(pod *framework.PodInfo, cluster Cluster) (*State, *framework.Status) {
	if pod.ParseError != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, pod.ParseError.Error())
	}
	s := &State{Pod: pod, nodeAffinity: nodeaffinity.GetRequiredNodeAffinity(pod.Pod)}
	if a := pod.Pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && len(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0 {
		p, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("preferred node affinity: %v", err))
		}
		s.preferred = p
	}
	nodes := cluster.Nodes()
	if pod.HasAffinity() || cluster.HavePodsWithAffinity() {
		s.affinity = newAffinityState(pod, nodes)
	}
	var err error
	if s.spread, err = newSpreadState(s, v1.DoNotSchedule, nodes); err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if s.softSpread, err = newSpreadState(s, v1.ScheduleAnyway, nodes); err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	return s, nil
}

// DependsOnOtherPods reports whether where this pod fits or scores depends
// on pods other than through node resources and ports: pod (anti-)affinity
// of its own or of existing pods, topology spreading, or volumes to bind
// (each placement takes a volume). Such pods are not
// placed as an equivalence-class batch, since each placement changes other
// nodes' verdicts.
func (s *State) DependsOnOtherPods() bool {
	return s.affinity != nil || s.spread != nil || s.softSpread != nil || s.volumes != nil
}

// Filter runs the filters on node in upstream's order and returns the first
// failure, or nil.
func (s *State) Filter(n *framework.NodeInfo) *framework.Status {
	if n.Node == nil {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonNodeNotReady)
	}
	if st := s.filterUnschedulable(n); st != nil {
		return st
	}
	if name := s.Pod.Pod.Spec.NodeName; name != "" && name != n.Name {
		return statusNodeName
	}
	if st := s.filterTaints(n); st != nil {
		return st
	}
	if ok, _ := s.nodeAffinity.Match(n.Node); !ok {
		return statusNodeAffinity
	}
	for _, p := range s.Pod.HostPorts {
		if n.UsedPorts.Conflicts(p) {
			return statusNodePorts
		}
	}
	if st := s.FilterResources(n); st != nil {
		return st
	}
	if s.volumes != nil {
		if st := s.volumes.filter(n); st != nil {
			return st
		}
	}
	if s.spread != nil {
		if st := s.spread.filter(n); st != nil {
			return st
		}
	}
	if s.affinity != nil {
		if st := s.affinity.filter(s.Pod, n); st != nil {
			return st
		}
	}
	return nil
}

// Immutable sentinel statuses for the common single-reason failures, so
// filtering thousands of nodes does not allocate one per node.
var (
	statusNodeName      = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonNodeName)
	statusUnschedulable = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonNodeUnschedulable)
	statusNodeAffinity  = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonNodeAffinity)
	statusNodePorts     = framework.NewStatus(framework.Unschedulable, framework.ReasonNodePorts)
	statusTooManyPods   = framework.NewStatus(framework.Unschedulable, framework.ReasonTooManyPods)
	statusCPU           = framework.NewStatus(framework.Unschedulable, "Insufficient cpu")
	statusMemory        = framework.NewStatus(framework.Unschedulable, "Insufficient memory")
)

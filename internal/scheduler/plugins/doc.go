// Package plugins implements kube-scheduler's default-profile filters and
// scores over the framework's PodInfo and NodeInfo:
//
//	filters: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity,
//	         NodePorts, NodeResourcesFit, VolumeBinding,
//	         PodTopologySpread (DoNotSchedule), InterPodAffinity (required)
//	scores:  NodeResourcesFit/LeastAllocated (weight 1),
//	         NodeResourcesBalancedAllocation (1), NodeAffinity preferred (2),
//	         TaintToleration PreferNoSchedule (3), InterPodAffinity
//	         preferred (2), PodTopologySpread ScheduleAnyway (2)
//
// PreFilter computes, once per pod (or per equivalence class), everything a
// filter needs from the whole cluster (topology counts); Filter then looks
// at one node and is safe to call from several goroutines at once.
// Reasons are upstream's strings. InterPodAffinity scores from both sides,
// as upstream: the pod's preferred terms over existing pods, and existing
// pods' terms (required ones with weight 1) over the pod.
//
// Files follow plugins: fit.go (NodeResourcesFit, BalancedAllocation),
// taints.go (TaintToleration, NodeUnschedulable), affinity.go
// (InterPodAffinity), spread.go (PodTopologySpread), volumebinding.go
// (VolumeBinding: PreFilterVolumes, run only for pods with claims, the
// per-node volume filter, and the decisions PreBind carries out);
// state.go holds
// PreFilter, the filter order and the one-line filters (NodeName,
// NodeAffinity, NodePorts); score.go normalizes and weighs the scores.
// Each has its table-driven tests beside it.
//
// Known gaps: no system-default topology spreading (pods without
// constraints are not spread by owner), and pod affinity terms with a
// non-empty namespaceSelector only see the namespaces they list.
package plugins

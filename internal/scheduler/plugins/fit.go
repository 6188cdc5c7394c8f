package plugins

import (
	"fmt"
	"math"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// This file is NodeResourcesFit (filter, LeastAllocated score) and
// NodeResourcesBalancedAllocation.

// FilterResources is NodeResourcesFit: the pod count, then every resource
// the pod requests against allocatable minus what is requested (plus
// nominated pods). All insufficient resources are reported, as upstream.
func (s *State) FilterResources(n *framework.NodeInfo) *framework.Status {
	req := &s.Pod.Requests
	used := &n.Requested
	podCount := int64(len(n.Pods))
	var nom *framework.Resource
	if s.Nominated != nil {
		if r, ok := s.Nominated[n.Name]; ok {
			nom = r
			podCount += r.AllowedPodNumber
		}
	}
	var reasons []string
	if podCount+1 > n.Allocatable.AllowedPodNumber {
		reasons = append(reasons, framework.ReasonTooManyPods)
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.Scalar) == 0 {
		return reasonsStatus(reasons)
	}
	extra := func(get func(*framework.Resource) int64) int64 {
		if nom == nil {
			return 0
		}
		return get(nom)
	}
	if req.MilliCPU > 0 && req.MilliCPU > n.Allocatable.MilliCPU-used.MilliCPU-extra(func(r *framework.Resource) int64 { return r.MilliCPU }) {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > n.Allocatable.Memory-used.Memory-extra(func(r *framework.Resource) int64 { return r.Memory }) {
		reasons = append(reasons, "Insufficient memory")
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > n.Allocatable.EphemeralStorage-used.EphemeralStorage-extra(func(r *framework.Resource) int64 { return r.EphemeralStorage }) {
		reasons = append(reasons, "Insufficient ephemeral-storage")
	}
	for name, q := range req.Scalar {
		if q == 0 {
			continue
		}
		var e int64
		if nom != nil {
			e = nom.Scalar[name]
		}
		if q > n.Allocatable.Scalar[name]-used.Scalar[name]-e {
			reasons = append(reasons, fmt.Sprintf("Insufficient %s", name))
		}
	}
	return reasonsStatus(reasons)
}

func reasonsStatus(reasons []string) *framework.Status {
	switch {
	case len(reasons) == 0:
		return nil
	case len(reasons) == 1 && reasons[0] == framework.ReasonTooManyPods:
		return statusTooManyPods
	case len(reasons) == 1 && reasons[0] == "Insufficient cpu":
		return statusCPU
	case len(reasons) == 1 && reasons[0] == "Insufficient memory":
		return statusMemory
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// ScoreResources is LeastAllocated (weight 1) plus BalancedAllocation
// (weight 1) for n with the pod added: the only scores that change when a
// pod of the same class lands on n.
func (s *State) ScoreResources(n *framework.NodeInfo) int64 {
	return WeightLeastAllocated*leastAllocated(s.Pod, n) + WeightBalanced*balanced(s.Pod, n)
}

func leastAllocated(pod *framework.PodInfo, n *framework.NodeInfo) int64 {
	la := func(req, alloc int64) int64 {
		if alloc == 0 || req > alloc {
			return 0
		}
		return (alloc - req) * MaxNodeScore / alloc
	}
	cpu := la(n.NonZeroMilliCPU+pod.NonZeroMilliCPU, n.Allocatable.MilliCPU)
	mem := la(n.NonZeroMemory+pod.NonZeroMemory, n.Allocatable.Memory)
	return (cpu + mem) / 2
}

func balanced(pod *framework.PodInfo, n *framework.NodeInfo) int64 {
	frac := func(req, alloc int64) float64 {
		if alloc == 0 {
			return 1
		}
		f := float64(req) / float64(alloc)
		if f > 1 {
			f = 1
		}
		return f
	}
	c := frac(n.Requested.MilliCPU+pod.Requests.MilliCPU, n.Allocatable.MilliCPU)
	m := frac(n.Requested.Memory+pod.Requests.Memory, n.Allocatable.Memory)
	std := math.Abs(c-m) / 2
	return int64((1 - std) * MaxNodeScore)
}

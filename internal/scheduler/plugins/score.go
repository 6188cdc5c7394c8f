package plugins

import (
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

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

// ScoreStatic returns, for each node, the weighted normalized sum of the
// scores that do not depend on the node's resources: preferred node
// affinity, PreferNoSchedule taints, preferred pod (anti-)affinity and
// soft topology spread. Normalization is over nodes, as upstream's
// NormalizeScore over the feasible nodes. out is reused when large enough.
func (s *State) ScoreStatic(nodes []*framework.NodeInfo, out []int64) []int64 {
	if cap(out) < len(nodes) {
		out = make([]int64, len(nodes))
	}
	out = out[:len(nodes)]
	for i := range out {
		out[i] = 0
	}
	raw := make([]int64, len(nodes))

	// NodeAffinity preferred: scaled so the best node gets 100.
	if s.preferred != nil {
		var max int64
		for i, n := range nodes {
			raw[i] = s.preferred.Score(n.Node)
			if raw[i] > max {
				max = raw[i]
			}
		}
		for i := range nodes {
			if max > 0 {
				out[i] += WeightNodeAffinity * raw[i] * MaxNodeScore / max
			}
		}
	}

	// TaintToleration: fewer intolerable PreferNoSchedule taints is better.
	var maxTaints int64
	for i, n := range nodes {
		raw[i] = s.intolerablePreferNoSchedule(n)
		if raw[i] > maxTaints {
			maxTaints = raw[i]
		}
	}
	for i := range nodes {
		score := int64(MaxNodeScore)
		if maxTaints > 0 {
			score = MaxNodeScore - raw[i]*MaxNodeScore/maxTaints
		}
		out[i] += WeightTaintToleration * score
	}

	// InterPodAffinity preferred: min-max normalized.
	if s.affinity != nil && len(s.affinity.preferred) > 0 {
		min, max := int64(math.MaxInt64), int64(math.MinInt64)
		for i, n := range nodes {
			raw[i] = s.affinity.score(s.Pod, n)
			min, max = minInt(min, raw[i]), maxInt(max, raw[i])
		}
		for i := range nodes {
			if max > min {
				out[i] += WeightInterPodAffinity * (raw[i] - min) * MaxNodeScore / (max - min)
			}
		}
	}

	// PodTopologySpread ScheduleAnyway: fewer matching pods is better.
	if s.softSpread != nil {
		fs := make([]float64, len(nodes))
		oks := make([]bool, len(nodes))
		min, max := math.MaxFloat64, 0.0
		for i, n := range nodes {
			fs[i], oks[i] = s.softSpread.score(n)
			if oks[i] {
				min, max = math.Min(min, fs[i]), math.Max(max, fs[i])
			}
		}
		for i := range nodes {
			if !oks[i] {
				continue
			}
			score := int64(MaxNodeScore)
			if max > 0 {
				score = int64(MaxNodeScore * (max + min - fs[i]) / max)
			}
			out[i] += WeightPodTopologySpread * score
		}
	}
	return out
}

func (s *State) intolerablePreferNoSchedule(n *framework.NodeInfo) int64 {
	var c int64
	for i := range n.PreferTaints {
		t := &n.PreferTaints[i]
		tolerated := false
		for j := range s.Pod.Pod.Spec.Tolerations {
			tol := &s.Pod.Pod.Spec.Tolerations[j]
			if (tol.Effect == "" || tol.Effect == v1.TaintEffectPreferNoSchedule) && tol.ToleratesTaint(discardLogger(), t, enableComparisonOperator) {
				tolerated = true
				break
			}
		}
		if !tolerated {
			c++
		}
	}
	return c
}

func minInt(a, b int64) int64 {
	if a < b {
		return a
	}
	return b
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

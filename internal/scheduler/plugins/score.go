package plugins

import (
	"math"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

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

	// InterPodAffinity preferred, both sides' terms: min-max normalized.
	if s.affinity != nil && s.affinity.hasScores() {
		min, max := int64(math.MaxInt64), int64(math.MinInt64)
		for i, n := range nodes {
			raw[i] = s.affinity.score(n)
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

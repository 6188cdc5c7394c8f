package plugins

import (
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

type spreadConstraint struct {
	maxSkew     int32
	key         string
	selector    labels.Selector
	minDomains  int32
	honorTaints bool
	// honorAffinity: only nodes passing the pod's node affinity/selector
	// count as domains (nodeAffinityPolicy Honor, the default).
	honorAffinity bool
	selfMatch     int32
}

// spreadState is PodTopologySpread's PreFilter result for one kind of
// constraint (DoNotSchedule or ScheduleAnyway): per constraint, matching
// pods per topology value over the eligible nodes.
type spreadState struct {
	constraints []spreadConstraint
	counts      []map[string]int32
	minCount    []int32
}

func newSpreadState(s *State, when v1.UnsatisfiableConstraintAction, nodes []*framework.NodeInfo) (*spreadState, error) {
	pod := s.Pod.Pod
	var cs []spreadConstraint
	for _, c := range pod.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != when {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("topology spread constraint %s: %w", c.TopologyKey, err)
		}
		for _, k := range c.MatchLabelKeys {
			if v, ok := pod.Labels[k]; ok {
				if r, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		sc := spreadConstraint{maxSkew: c.MaxSkew, key: c.TopologyKey, selector: sel, minDomains: 1,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			sc.minDomains = *c.MinDomains
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			sc.selfMatch = 1
		}
		cs = append(cs, sc)
	}
	if len(cs) == 0 {
		return nil, nil
	}
	st := &spreadState{constraints: cs, counts: make([]map[string]int32, len(cs)), minCount: make([]int32, len(cs))}
	for i := range st.counts {
		st.counts[i] = map[string]int32{}
	}
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		nl := n.Node.Labels
		hasAll := true
		for i := range cs {
			if _, ok := nl[cs[i].key]; !ok {
				hasAll = false
				break
			}
		}
		if !hasAll {
			continue
		}
		for i := range cs {
			c := &cs[i]
			if c.honorAffinity {
				if ok, _ := s.nodeAffinity.Match(n.Node); !ok {
					continue
				}
			}
			if c.honorTaints && s.filterTaints(n) != nil {
				continue
			}
			var cnt int32
			for _, e := range n.Pods {
				if e.Pod.Namespace == pod.Namespace && e.Pod.DeletionTimestamp == nil && c.selector.Matches(labels.Set(e.Pod.Labels)) {
					cnt++
				}
			}
			st.counts[i][nl[c.key]] += cnt
		}
	}
	for i := range cs {
		min := int32(math.MaxInt32)
		for _, v := range st.counts[i] {
			if v < min {
				min = v
			}
		}
		if len(st.counts[i]) < int(cs[i].minDomains) || min == math.MaxInt32 {
			min = 0
		}
		st.minCount[i] = min
	}
	return st, nil
}

var (
	statusSpread             = framework.NewStatus(framework.Unschedulable, framework.ReasonSpread)
	statusSpreadMissingLabel = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonSpreadMissingLabel)
)

func (st *spreadState) filter(n *framework.NodeInfo) *framework.Status {
	for i := range st.constraints {
		c := &st.constraints[i]
		v, ok := n.Node.Labels[c.key]
		if !ok {
			return statusSpreadMissingLabel
		}
		if skew := st.counts[i][v] + c.selfMatch - st.minCount[i]; skew > c.maxSkew {
			return statusSpread
		}
	}
	return nil
}

// score is the soft-spread raw score (lower is better): matching pods in
// n's domains weighted by log(domains+2), as upstream, plus maxSkew-1.
// ok is false when n lacks a key.
func (st *spreadState) score(n *framework.NodeInfo) (float64, bool) {
	var s float64
	for i := range st.constraints {
		c := &st.constraints[i]
		v, ok := n.Node.Labels[c.key]
		if !ok {
			return 0, false
		}
		w := math.Log(float64(len(st.counts[i]) + 2))
		s += float64(st.counts[i][v]+c.selfMatch)*w + float64(c.maxSkew-1)
	}
	return s, true
}

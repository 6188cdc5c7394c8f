package plugins

import (
	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// HardPodAffinityWeight is upstream's default hardPodAffinityWeight: an
// existing pod's required affinity term that matches the incoming pod adds
// this much to the score of the nodes in that pod's topology domain.
const HardPodAffinityWeight = 1

type topologyPair struct{ key, value string }

// affinityState is InterPodAffinity's PreFilter and PreScore result: per
// required term of the incoming pod, how many matching pods each topology
// value holds; the topology pairs existing pods' required anti-affinity
// forbids; and the preferred-term score per topology pair.
type affinityState struct {
	// affinityCounts[i][v] counts existing pods that match all of the
	// pod's required affinity terms, on nodes whose label for term i's
	// topology key is v. Upstream counts a pod only if it matches every
	// term, so two terms met by two different pods are not met.
	affinityCounts []map[string]int
	antiCounts     []map[string]int // per RequiredAntiAffinity term
	existingAnti   map[topologyPair]int
	// anyAffinityMatch: some existing pod matched all required affinity
	// terms on a node with one of their keys. When none does and the pod
	// matches its own terms, it may go anywhere with the keys (the first
	// pod of a group), as upstream.
	anyAffinityMatch bool
	selfMatch        bool

	// topologyScore[key][value] is upstream's PreScore state: the summed
	// weights (negative for anti-affinity) of preferred terms matched in
	// that topology domain, from both sides: the incoming pod's terms
	// matching existing pods, and existing pods' terms matching it.
	topologyScore map[string]map[string]int64
}

func newAffinityState(pod *framework.PodInfo, nodes []*framework.NodeInfo) *affinityState {
	st := &affinityState{existingAnti: map[topologyPair]int{}, topologyScore: map[string]map[string]int64{}}
	st.affinityCounts = make([]map[string]int, len(pod.RequiredAffinity))
	for i := range st.affinityCounts {
		st.affinityCounts[i] = map[string]int{}
	}
	st.antiCounts = make([]map[string]int, len(pod.RequiredAntiAffinity))
	for i := range st.antiCounts {
		st.antiCounts[i] = map[string]int{}
	}
	st.selfMatch = matchesAll(pod.RequiredAffinity, pod.Pod)
	// Every pod must be looked at only when the incoming pod has terms of
	// its own; otherwise only existing pods' terms matter, and the nodes
	// list those pods apart.
	needScan := len(pod.RequiredAffinity)+len(pod.RequiredAntiAffinity)+len(pod.PreferredAffinity)+len(pod.PreferredAntiAffinity) > 0
	for _, n := range nodes {
		if n.Node == nil {
			continue
		}
		labels := n.Node.Labels
		for _, e := range n.PodsWithRequiredAntiAffinity {
			for i := range e.RequiredAntiAffinity {
				t := &e.RequiredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(pod.Pod) {
					st.existingAnti[topologyPair{t.TopologyKey, v}]++
				}
			}
		}
		for _, e := range n.PodsWithAffinity {
			if e.Pod.UID == pod.Pod.UID {
				continue
			}
			for i := range e.RequiredAffinity {
				st.addScore(&e.RequiredAffinity[i], HardPodAffinityWeight, pod.Pod, labels)
			}
			for i := range e.PreferredAffinity {
				st.addScore(&e.PreferredAffinity[i].AffinityTerm, int64(e.PreferredAffinity[i].Weight), pod.Pod, labels)
			}
			for i := range e.PreferredAntiAffinity {
				st.addScore(&e.PreferredAntiAffinity[i].AffinityTerm, -int64(e.PreferredAntiAffinity[i].Weight), pod.Pod, labels)
			}
		}
		if !needScan {
			continue
		}
		for _, e := range n.Pods {
			if e.Pod.UID == pod.Pod.UID {
				continue
			}
			if matchesAll(pod.RequiredAffinity, e.Pod) {
				for i := range pod.RequiredAffinity {
					if v, ok := labels[pod.RequiredAffinity[i].TopologyKey]; ok {
						st.affinityCounts[i][v]++
						st.anyAffinityMatch = true
					}
				}
			}
			for i := range pod.RequiredAntiAffinity {
				t := &pod.RequiredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(e.Pod) {
					st.antiCounts[i][v]++
				}
			}
			for i := range pod.PreferredAffinity {
				st.addScore(&pod.PreferredAffinity[i].AffinityTerm, int64(pod.PreferredAffinity[i].Weight), e.Pod, labels)
			}
			for i := range pod.PreferredAntiAffinity {
				st.addScore(&pod.PreferredAntiAffinity[i].AffinityTerm, -int64(pod.PreferredAntiAffinity[i].Weight), e.Pod, labels)
			}
		}
	}
	return st
}

// matchesAll reports whether pod matches every term; false for no terms.
func matchesAll(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod) {
			return false
		}
	}
	return true
}

// addScore adds weight to the topology domain of a node with labels when
// t matches target.
func (st *affinityState) addScore(t *framework.AffinityTerm, weight int64, target *v1.Pod, labels map[string]string) {
	v, ok := labels[t.TopologyKey]
	if !ok || !t.Matches(target) {
		return
	}
	m := st.topologyScore[t.TopologyKey]
	if m == nil {
		m = map[string]int64{}
		st.topologyScore[t.TopologyKey] = m
	}
	m[v] += weight
}

var (
	statusAffinity         = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonAffinityRules)
	statusAntiAffinity     = framework.NewStatus(framework.Unschedulable, framework.ReasonAntiAffinityRules)
	statusExistingAntiAffn = framework.NewStatus(framework.Unschedulable, framework.ReasonExistingAntiAffinity)
)

// filter checks, in upstream's order, the pod's required affinity, its
// required anti-affinity, then existing pods' anti-affinity. The order
// matters beyond the message: an affinity failure is unresolvable, so
// preemption skips the node, while the anti-affinity failures may be
// cured by evicting pods.
func (st *affinityState) filter(pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	labels := n.Node.Labels
	if !(st.selfMatch && !st.anyAffinityMatch) {
		for i := range pod.RequiredAffinity {
			v, ok := labels[pod.RequiredAffinity[i].TopologyKey]
			if !ok || st.affinityCounts[i][v] == 0 {
				return statusAffinity
			}
		}
	} else {
		// The first pod of a self-affine group still needs the keys.
		for i := range pod.RequiredAffinity {
			if _, ok := labels[pod.RequiredAffinity[i].TopologyKey]; !ok {
				return statusAffinity
			}
		}
	}
	for i := range pod.RequiredAntiAffinity {
		if v, ok := labels[pod.RequiredAntiAffinity[i].TopologyKey]; ok && st.antiCounts[i][v] > 0 {
			return statusAntiAffinity
		}
	}
	for p := range st.existingAnti {
		if v, ok := labels[p.key]; ok && v == p.value {
			return statusExistingAntiAffn
		}
	}
	return nil
}

// hasScores reports whether any preferred term matched anywhere; if none
// did, InterPodAffinity scores every node 0, as upstream.
func (st *affinityState) hasScores() bool { return len(st.topologyScore) > 0 }

// score is n's raw InterPodAffinity score: the sum, over the topology keys
// with scores, of the score of n's domain.
func (st *affinityState) score(n *framework.NodeInfo) int64 {
	var s int64
	labels := n.Node.Labels
	for key, values := range st.topologyScore {
		if v, ok := labels[key]; ok {
			s += values[v]
		}
	}
	return s
}

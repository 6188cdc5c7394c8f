package plugins

import (
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

type topologyPair struct{ key, value string }

// affinityState is InterPodAffinity's PreFilter result: per term of the
// incoming pod, how many matching pods each topology value holds, and the
// topology pairs existing pods' required anti-affinity forbids.
type affinityState struct {
	affinityCounts []map[string]int // per RequiredAffinity term: value -> matching pods
	antiCounts     []map[string]int // per RequiredAntiAffinity term
	existingAnti   map[topologyPair]int
	// anyAffinityMatch: some existing pod matched some required affinity
	// term. When none does and the pod matches its own terms, it may go
	// anywhere (the first pod of a group), as upstream.
	anyAffinityMatch bool
	selfMatch        bool

	preferred []map[string]int64 // per preferred term (affinity then anti): value -> weighted matches
}

func newAffinityState(pod *framework.PodInfo, nodes []*framework.NodeInfo) *affinityState {
	st := &affinityState{existingAnti: map[topologyPair]int{}}
	st.affinityCounts = make([]map[string]int, len(pod.RequiredAffinity))
	for i := range st.affinityCounts {
		st.affinityCounts[i] = map[string]int{}
	}
	st.antiCounts = make([]map[string]int, len(pod.RequiredAntiAffinity))
	for i := range st.antiCounts {
		st.antiCounts[i] = map[string]int{}
	}
	nPref := len(pod.PreferredAffinity) + len(pod.PreferredAntiAffinity)
	st.preferred = make([]map[string]int64, nPref)
	for i := range st.preferred {
		st.preferred[i] = map[string]int64{}
	}
	st.selfMatch = len(pod.RequiredAffinity) > 0
	for i := range pod.RequiredAffinity {
		if !pod.RequiredAffinity[i].Matches(pod.Pod) {
			st.selfMatch = false
		}
	}
	needScan := len(pod.RequiredAffinity)+len(pod.RequiredAntiAffinity)+nPref > 0
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
		if !needScan {
			continue
		}
		for _, e := range n.Pods {
			if e.Pod.UID == pod.Pod.UID {
				continue
			}
			for i := range pod.RequiredAffinity {
				t := &pod.RequiredAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(e.Pod) {
					st.affinityCounts[i][v]++
					st.anyAffinityMatch = true
				}
			}
			for i := range pod.RequiredAntiAffinity {
				t := &pod.RequiredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(e.Pod) {
					st.antiCounts[i][v]++
				}
			}
			for i := range pod.PreferredAffinity {
				t := &pod.PreferredAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(e.Pod) {
					st.preferred[i][v] += int64(t.Weight)
				}
			}
			for i := range pod.PreferredAntiAffinity {
				t := &pod.PreferredAntiAffinity[i]
				if v, ok := labels[t.TopologyKey]; ok && t.Matches(e.Pod) {
					st.preferred[len(pod.PreferredAffinity)+i][v] -= int64(t.Weight)
				}
			}
		}
	}
	return st
}

var (
	statusAffinity         = framework.NewStatus(framework.UnschedulableAndUnresolvable, framework.ReasonAffinityRules)
	statusAntiAffinity     = framework.NewStatus(framework.Unschedulable, framework.ReasonAntiAffinityRules)
	statusExistingAntiAffn = framework.NewStatus(framework.Unschedulable, framework.ReasonExistingAntiAffinity)
)

func (st *affinityState) filter(pod *framework.PodInfo, n *framework.NodeInfo) *framework.Status {
	labels := n.Node.Labels
	for p := range st.existingAnti {
		if labels[p.key] == p.value {
			if _, ok := labels[p.key]; ok {
				return statusExistingAntiAffn
			}
		}
	}
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
	return nil
}

// score is the preferred (anti-)affinity raw score of n.
func (st *affinityState) score(pod *framework.PodInfo, n *framework.NodeInfo) int64 {
	var s int64
	labels := n.Node.Labels
	for i := range pod.PreferredAffinity {
		if v, ok := labels[pod.PreferredAffinity[i].TopologyKey]; ok {
			s += st.preferred[i][v]
		}
	}
	for i := range pod.PreferredAntiAffinity {
		if v, ok := labels[pod.PreferredAntiAffinity[i].TopologyKey]; ok {
			s += st.preferred[len(pod.PreferredAffinity)+i][v]
		}
	}
	return s
}

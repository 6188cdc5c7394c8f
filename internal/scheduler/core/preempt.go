package core

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/plugins"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// Upstream's preemption diagnosis strings.
const (
	reasonNoVictims    = "No preemption victims found for incoming pod"
	reasonNotHelpful   = "Preemption is not helpful for scheduling"
	reasonPolicyNever  = "preemption: not eligible due to preemptionPolicy=Never."
	reasonWaitNominate = "preemption: not eligible, waiting for the pods preempted on the nominated node to terminate."
)

type candidate struct {
	node          string
	victims       []*framework.PodInfo
	pdbViolations int
}

// preempt looks for a node where evicting lower-priority pods makes qp fit
// (upstream's DefaultPreemption: fewest PDB violations, then lowest highest
// victim priority, then lowest priority sum, then fewest victims), nominates
// it and deletes the victims. It returns the "preemption: ..." part of the
// message, empty when it preempted.
func (s *Scheduler) preempt(ctx context.Context, qp *queue.QueuedPod, res *searchResult) string {
	pod := qp.Info
	if p := pod.Pod.Spec.PreemptionPolicy; p != nil && *p == v1.PreemptNever {
		return reasonPolicyNever
	}
	var pdbs []*policyv1.PodDisruptionBudget
	if s.cfg.PDBs != nil {
		pdbs = s.cfg.PDBs.PDBs()
	}
	var best *candidate
	counts := map[string]int{}
	waiting := false
	s.cache.View(func(snap cache.Snapshot) {
		// A pod that already preempted on its nominated node waits for its
		// victims to terminate rather than preempting again.
		if nn := pod.Pod.Status.NominatedNodeName; nn != "" {
			if n := snap.Node(nn); n != nil {
				for _, p := range n.Pods {
					if p.Pod.DeletionTimestamp != nil && p.Priority < pod.Priority {
						waiting = true
						return
					}
				}
			}
		}
		nodes := snap.Nodes()
		// Like upstream's DryRunPreemption, stop once enough candidates
		// are found (10% of nodes, at least 100).
		enough := max(len(nodes)/10, 100)
		found := 0
		for _, n := range nodes {
			st := res.failed[n.Name]
			if st == nil || st.Code != framework.Unschedulable {
				counts[reasonNotHelpful]++
				continue
			}
			if found >= enough {
				continue
			}
			if !couldFit(pod, n) {
				counts[reasonNoVictims]++
				continue
			}
			c := selectVictims(res.state, pod, n, pdbs)
			if c == nil {
				counts[reasonNoVictims]++
				continue
			}
			found++
			if better(c, best) {
				best = c
			}
		}
	})
	if waiting {
		return reasonWaitNominate
	}
	if best == nil {
		return "preemption: " + summarize(res.numNodes, counts)
	}
	victims := make([]*v1.Pod, len(best.victims))
	for i, v := range best.victims {
		victims[i] = v.Pod
	}
	s.nominator.add(pod, best.node)
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.PreemptionVictims.Observe(float64(len(victims)))
	}
	if err := s.cfg.Reporter.Preempt(ctx, pod.Pod, best.node, victims); err != nil {
		s.cfg.Logger.Info("preemption failed", "pod", pod.Key(), "node", best.node, "err", err)
		s.nominator.remove(pod.Pod.UID)
		return fmt.Sprintf("preemption: deleting victims on %s failed: %v.", best.node, err)
	}
	s.cfg.Logger.Info("preempted", "pod", pod.Key(), "node", best.node, "victims", len(victims))
	return ""
}

// couldFit is a cheap bound before selectVictims copies the node: would
// the pod's cpu, memory and pod count fit if every lower-priority pod went?
func couldFit(pod *framework.PodInfo, n *framework.NodeInfo) bool {
	var cpu, mem, pods int64
	for _, p := range n.Pods {
		if p.Priority < pod.Priority {
			cpu += p.Requests.MilliCPU
			mem += p.Requests.Memory
			pods++
		}
	}
	if pods == 0 {
		return false
	}
	free := func(alloc, used, freed int64) int64 { return alloc - used + freed }
	return pod.Requests.MilliCPU <= free(n.Allocatable.MilliCPU, n.Requested.MilliCPU, cpu) &&
		pod.Requests.Memory <= free(n.Allocatable.Memory, n.Requested.Memory, mem) &&
		int64(len(n.Pods))-pods+1 <= n.Allocatable.AllowedPodNumber
}

// selectVictims removes every lower-priority pod from a copy of n; if pod
// then fits, it reprieves as many as it can, PDB-protected and
// higher-priority ones first, and returns the rest as victims.
func selectVictims(st *plugins.State, pod *framework.PodInfo, n *framework.NodeInfo, pdbs []*policyv1.PodDisruptionBudget) *candidate {
	clone := n.Clone()
	var potential []*framework.PodInfo
	for _, p := range n.Pods {
		if p.Priority < pod.Priority {
			potential = append(potential, p)
			clone.RemovePod(p.Pod.UID)
		}
	}
	if len(potential) == 0 || !st.Filter(clone).IsSuccess() {
		return nil
	}
	// More important first: higher priority, then older.
	sort.SliceStable(potential, func(i, j int) bool {
		a, b := potential[i], potential[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		return a.Pod.CreationTimestamp.Before(&b.Pod.CreationTimestamp)
	})
	allowed := disruptionsAllowed(pdbs)
	var violating, other []*framework.PodInfo
	for _, p := range potential {
		if violatesPDB(p.Pod, pdbs, allowed) {
			violating = append(violating, p)
		} else {
			other = append(other, p)
		}
	}
	c := &candidate{node: n.Name}
	reprieve := func(p *framework.PodInfo) bool {
		clone.AddPod(p)
		if st.Filter(clone).IsSuccess() {
			return true
		}
		clone.RemovePod(p.Pod.UID)
		c.victims = append(c.victims, p)
		return false
	}
	for _, p := range violating {
		if !reprieve(p) {
			c.pdbViolations++
		}
	}
	for _, p := range other {
		reprieve(p)
	}
	if len(c.victims) == 0 {
		return nil
	}
	return c
}

func disruptionsAllowed(pdbs []*policyv1.PodDisruptionBudget) map[*policyv1.PodDisruptionBudget]int32 {
	m := make(map[*policyv1.PodDisruptionBudget]int32, len(pdbs))
	for _, p := range pdbs {
		m[p] = p.Status.DisruptionsAllowed
	}
	return m
}

// violatesPDB reports whether evicting pod would exceed a budget, and takes
// one disruption from each matching budget that still allows one.
func violatesPDB(pod *v1.Pod, pdbs []*policyv1.PodDisruptionBudget, allowed map[*policyv1.PodDisruptionBudget]int32) bool {
	violates := false
	for _, pdb := range pdbs {
		if pdb.Namespace != pod.Namespace {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if allowed[pdb] <= 0 {
			violates = true
		} else {
			allowed[pdb]--
		}
	}
	return violates
}

// better orders candidates as upstream's pickOneNodeForPreemption.
func better(a, b *candidate) bool {
	if b == nil {
		return true
	}
	if a.pdbViolations != b.pdbViolations {
		return a.pdbViolations < b.pdbViolations
	}
	ha, hb := highest(a), highest(b)
	if ha != hb {
		return ha < hb
	}
	sa, sb := sum(a), sum(b)
	if sa != sb {
		return sa < sb
	}
	return len(a.victims) < len(b.victims)
}

func highest(c *candidate) int32 {
	h := int32(-1 << 31)
	for _, v := range c.victims {
		h = max(h, v.Priority)
	}
	return h
}

func sum(c *candidate) int64 {
	var s int64
	for _, v := range c.victims {
		// Offset so negative priorities still sum sensibly, as upstream.
		s += int64(v.Priority) + int64(1<<31)
	}
	return s
}

package core

import (
	"container/heap"
	"sync"
	"sync/atomic"

	"github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/plugins"
)

// Upstream's sampling constants (pkg/scheduler/schedule_one.go).
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	// parallelThreshold: below this many nodes one goroutine is faster.
	parallelThreshold = 512
)

// numFeasibleNodesToFind is upstream's adaptive sample size: all nodes
// below 100; otherwise percentage 50 - nodes/125, at least 5%, at least 100
// nodes.
func numFeasibleNodesToFind(percentage, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	adaptive := percentage
	if adaptive <= 0 {
		adaptive = 50 - numAllNodes/125
		if adaptive < minFeasibleNodesPercentageToFind {
			adaptive = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * adaptive / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// search runs PreFilter and the feasibility search for pi on the cache and
// scores the feasible nodes.
func (s *Scheduler) search(pi *framework.PodInfo) *searchResult {
	res := &searchResult{}
	s.cache.View(func(snap cache.Snapshot) {
		nodes := snap.Nodes()
		var cluster plugins.Cluster = snap
		if s.cfg.RebuildSnapshot {
			copied := make([]*framework.NodeInfo, len(nodes))
			for i, n := range nodes {
				copied[i] = n.Clone()
			}
			nodes = copied
			cluster = rebuilt{nodes: nodes, affinity: snap.HavePodsWithAffinity()}
		}
		res.numNodes = len(nodes)
		st, status := plugins.PreFilter(pi, cluster)
		if status != nil {
			res.preFilter = status
			return
		}
		if pi.HasClaims && s.cfg.Volumes != nil {
			if status := plugins.PreFilterVolumes(st, s.cfg.Volumes); status != nil {
				res.preFilter = status
				return
			}
		}
		st.Nominated = s.nominator.requestsFor(pi)
		res.state = st
		if len(nodes) == 0 {
			return
		}
		want := numFeasibleNodesToFind(s.cfg.PercentageOfNodesToScore, len(nodes))
		feasible, failed, processed := s.findFeasible(st, nodes, want)
		s.nextStart = (s.nextStart + processed) % len(nodes)
		res.feasible = feasible
		if len(feasible) == 0 {
			res.failed = failed
			return
		}
		res.static = st.ScoreStatic(feasible, nil)
		res.scores = make([]int64, len(feasible))
		for i, n := range feasible {
			res.scores[i] = res.static[i] + st.ScoreResources(n)
		}
	})
	return res
}

// findFeasible filters nodes starting at s.nextStart until want feasible
// nodes are found or every node was checked. It returns the feasible nodes,
// the failed nodes' statuses (only when none is feasible) and how many
// nodes it checked.
func (s *Scheduler) findFeasible(st *plugins.State, nodes []*framework.NodeInfo, want int) ([]*framework.NodeInfo, map[string]*framework.Status, int) {
	n := len(nodes)
	start := s.nextStart % n
	// Buffers reused across searches (the loop goroutine owns them; a
	// search's result is consumed before the next search starts).
	if cap(s.statusBuf) < n {
		s.statusBuf = make([]*framework.Status, n)
	}
	statuses := s.statusBuf[:n]
	clear(statuses)
	if cap(s.feasibleBuf) < min(want, n) {
		s.feasibleBuf = make([]*framework.NodeInfo, min(want, n))
	}
	var feasible []*framework.NodeInfo
	processed := 0
	if s.cfg.Parallelism <= 1 || n < parallelThreshold {
		feasible = s.feasibleBuf[:0]
		for ; processed < n && len(feasible) < want; processed++ {
			idx := (start + processed) % n
			if status := st.Filter(nodes[idx]); status.IsSuccess() {
				feasible = append(feasible, nodes[idx])
			} else {
				statuses[idx] = status
			}
		}
	} else {
		buf := s.feasibleBuf[:min(want, n)]
		var found, next, checked atomic.Int64
		chunk := max(32, n/(s.cfg.Parallelism*8))
		var wg sync.WaitGroup
		for w := 0; w < s.cfg.Parallelism; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine int64
				defer func() { checked.Add(mine) }()
				for {
					lo := int(next.Add(int64(chunk))) - chunk
					if lo >= n || found.Load() >= int64(want) {
						return
					}
					for i := lo; i < min(lo+chunk, n); i++ {
						if found.Load() >= int64(want) {
							return
						}
						idx := (start + i) % n
						mine++
						if status := st.Filter(nodes[idx]); status.IsSuccess() {
							k := found.Add(1) - 1
							if k >= int64(len(buf)) {
								return
							}
							buf[k] = nodes[idx]
						} else {
							statuses[idx] = status
						}
					}
				}
			}()
		}
		wg.Wait()
		feasible = buf[:min(int(found.Load()), len(buf))]
		processed = int(checked.Load())
	}
	if len(feasible) > 0 {
		return feasible, nil, processed
	}
	failed := make(map[string]*framework.Status, n)
	for i, status := range statuses {
		if status != nil {
			failed[nodes[i].Name] = status
		}
	}
	return nil, failed, processed
}

// selectHost picks the highest-scoring feasible node, breaking ties
// uniformly at random (reservoir sampling), as upstream.
func (s *Scheduler) selectHost(res *searchResult) *framework.NodeInfo {
	best, ties := 0, 1
	for i := 1; i < len(res.scores); i++ {
		switch {
		case res.scores[i] > res.scores[best]:
			best, ties = i, 1
		case res.scores[i] == res.scores[best]:
			ties++
			if s.rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return res.feasible[best]
}

// scoreHeap orders a class's feasible nodes by current score, best first.
type scoreHeap struct{ items []heapEntry }

type heapEntry struct {
	node  *framework.NodeInfo
	idx   int // index into the search result's feasible/static slices
	score int64
}

func newScoreHeap(res *searchResult) *scoreHeap {
	h := &scoreHeap{items: make([]heapEntry, len(res.feasible))}
	for i, n := range res.feasible {
		h.items[i] = heapEntry{node: n, idx: i, score: res.scores[i]}
	}
	heap.Init(h)
	return h
}

func (h *scoreHeap) Len() int { return len(h.items) }
func (h *scoreHeap) Less(i, j int) bool {
	if h.items[i].score != h.items[j].score {
		return h.items[i].score > h.items[j].score
	}
	return h.items[i].idx < h.items[j].idx
}
func (h *scoreHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *scoreHeap) Push(x any)    { h.items = append(h.items, x.(heapEntry)) }
func (h *scoreHeap) Pop() any {
	e := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return e
}

func (h *scoreHeap) top() heapEntry { return h.items[0] }
func (h *scoreHeap) drop()          { heap.Pop(h) }
func (h *scoreHeap) update(score int64) {
	h.items[0].score = score
	heap.Fix(h, 0)
}

// rebuilt is a per-search copy of the cluster (RebuildSnapshot mode).
type rebuilt struct {
	nodes    []*framework.NodeInfo
	affinity bool
}

func (r rebuilt) Nodes() []*framework.NodeInfo { return r.nodes }
func (r rebuilt) HavePodsWithAffinity() bool   { return r.affinity }

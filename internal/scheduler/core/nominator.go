package core

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// nominator remembers pods that preempted victims on a node and are waiting
// for them to go, so lower-priority pods do not take the room meanwhile.
type nominator struct {
	mu struct {
		sync.Mutex
		pods map[types.UID]nomination
	}
}

type nomination struct {
	node     string
	priority int32
	requests framework.Resource
}

func newNominator() *nominator {
	n := &nominator{}
	n.mu.pods = map[types.UID]nomination{}
	return n
}

func (n *nominator) add(pi *framework.PodInfo, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.pods[pi.Pod.UID] = nomination{node: node, priority: pi.Priority, requests: pi.Requests}
}

func (n *nominator) remove(uid types.UID) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.mu.pods, uid)
}

// requestsFor sums, per node, the requests of pods nominated there with
// priority at least pi's (other than pi); nil when there are none.
func (n *nominator) requestsFor(pi *framework.PodInfo) map[string]*framework.Resource {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.mu.pods) == 0 {
		return nil
	}
	var out map[string]*framework.Resource
	for uid, nom := range n.mu.pods {
		if uid == pi.Pod.UID || nom.priority < pi.Priority {
			continue
		}
		if out == nil {
			out = map[string]*framework.Resource{}
		}
		r := out[nom.node]
		if r == nil {
			r = &framework.Resource{}
			out[nom.node] = r
		}
		r.Add(&nom.requests)
	}
	return out
}

package node

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// model is the naive statement of what HasPath must answer: the current
// pods and PVs, searched per question.
type model struct {
	pods map[string]*podEdges // by name; all in namespace "ns"
	pvs  map[string]*pvEdges
}

func (m *model) hasPath(node string, k kind, name string) bool {
	podRefs := func(k kind, name string) bool {
		for _, p := range m.pods {
			if p.node != node {
				continue
			}
			for _, r := range p.refs {
				if r.kind == k && r.name == name {
					return true
				}
			}
		}
		return false
	}
	pvReaches := func(pv *pvEdges) bool {
		return pv.claimName != "" && podRefs(kindPVC, pv.claimName)
	}
	switch k {
	case kindPod:
		p, ok := m.pods[name]
		return ok && p.node == node
	case kindPV:
		pv, ok := m.pvs[name]
		return ok && pvReaches(pv)
	case kindSecret:
		if podRefs(kindSecret, name) {
			return true
		}
		for _, pv := range m.pvs {
			for _, s := range pv.secrets {
				if s.name == name && pvReaches(pv) {
					return true
				}
			}
		}
		return false
	}
	return podRefs(k, name)
}

// TestGraphMatchesModel applies random pod and PV changes, deletions and
// relists to the graph and to the model, and compares every answer.
func TestGraphMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := NewGraph()
	m := &model{pods: map[string]*podEdges{}, pvs: map[string]*pvEdges{}}
	nodes := []string{"a", "b", "c"}
	pick := func(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, rng.IntN(n)) }
	randomPod := func() *podEdges {
		e := &podEdges{namespace: "ns", name: pick("p", 8), node: nodes[rng.IntN(len(nodes))]}
		if rng.IntN(6) == 0 {
			e.node = "" // unbound
		}
		seen := map[podRef]bool{}
		for range rng.IntN(4) {
			r := podRef{[]kind{kindSecret, kindConfigMap, kindPVC, kindServiceAccount, kindResourceClaim}[rng.IntN(5)], pick("o", 4)}
			if !seen[r] {
				seen[r] = true
				e.refs = append(e.refs, r)
			}
		}
		return e
	}
	randomPV := func() *pvEdges {
		e := &pvEdges{name: pick("pv", 4)}
		if rng.IntN(4) > 0 {
			e.claimNamespace, e.claimName = "ns", pick("o", 4)
			for range rng.IntN(3) {
				e.secrets = append(e.secrets, objectRef{"ns", pick("o", 4)})
			}
		}
		return e
	}
	check := func(step int) {
		t.Helper()
		for _, node := range append(nodes, "d") {
			for k := range numKinds {
				if k == kindVolumeAttachment || k == kindResourceSlice {
					continue
				}
				for _, prefix := range []string{"o", "p", "pv"} {
					for i := range 8 {
						name := fmt.Sprintf("%s%d", prefix, i)
						ns := "ns"
						if k == kindPV {
							ns = ""
						}
						if got, want := g.HasPath(node, k, ns, name), m.hasPath(node, k, name); got != want {
							t.Fatalf("step %d: HasPath(%s, %s, %s) = %v, want %v", step, node, k, name, got, want)
						}
					}
				}
			}
		}
	}
	for step := range 3000 {
		switch op := rng.IntN(10); {
		case op < 4:
			e := randomPod()
			g.setPod(e)
			if e.node == "" {
				delete(m.pods, e.name)
			} else {
				m.pods[e.name] = e
			}
		case op < 5:
			name := pick("p", 8)
			g.deletePod("ns", name)
			delete(m.pods, name)
		case op < 7:
			e := randomPV()
			g.setPV(e)
			m.pvs[e.name] = e
		case op < 8:
			name := pick("pv", 4)
			g.deletePV(name)
			delete(m.pvs, name)
		default:
			// A relist that lists only some of the pods.
			g.beginRelist(kindPod)
			for name, e := range m.pods {
				if rng.IntN(3) == 0 {
					delete(m.pods, name)
					continue
				}
				g.setPod(e)
			}
			g.endRelist(kindPod)
		}
		check(step)
	}
	// Everything gone: nothing is left behind.
	for name := range m.pods {
		g.deletePod("ns", name)
	}
	for name := range m.pvs {
		g.deletePV(name)
	}
	if s := g.Stats(); s.Nodes != 0 || s.Vertices != [numKinds]int{} {
		t.Fatalf("graph not empty: %+v", s)
	}
}

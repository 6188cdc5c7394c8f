package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

// term is a pod affinity term selecting app=value pods over key; ns, if
// given, lists the namespaces it looks in.
func term(key, app string, ns ...string) v1.PodAffinityTerm {
	return v1.PodAffinityTerm{LabelSelector: selector("app", app), TopologyKey: key, Namespaces: ns}
}

// allNamespaces makes t look in every namespace (namespaceSelector: {}).
func allNamespaces(t v1.PodAffinityTerm) v1.PodAffinityTerm {
	t.NamespaceSelector = &metav1.LabelSelector{}
	return t
}

func weighted(w int32, t v1.PodAffinityTerm) v1.WeightedPodAffinityTerm {
	return v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t}
}

func affinity(p *v1.Pod) *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

func podAffinity(p *v1.Pod) *v1.PodAffinity {
	a := affinity(p)
	if a.PodAffinity == nil {
		a.PodAffinity = &v1.PodAffinity{}
	}
	return a.PodAffinity
}

func podAntiAffinity(p *v1.Pod) *v1.PodAntiAffinity {
	a := affinity(p)
	if a.PodAntiAffinity == nil {
		a.PodAntiAffinity = &v1.PodAntiAffinity{}
	}
	return a.PodAntiAffinity
}

func requireAffinity(terms ...v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		pa := podAffinity(p)
		pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

func requireAntiAffinity(terms ...v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		pa := podAntiAffinity(p)
		pa.RequiredDuringSchedulingIgnoredDuringExecution = append(pa.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

func preferAffinity(terms ...v1.WeightedPodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		pa := podAffinity(p)
		pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

func preferAntiAffinity(terms ...v1.WeightedPodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		pa := podAntiAffinity(p)
		pa.PreferredDuringSchedulingIgnoredDuringExecution = append(pa.PreferredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

func inNamespace(ns string) podOpt { return func(p *v1.Pod) { p.Namespace = ns } }

// app labels a pod app=value, the label the terms above select on.
func app(value string) podOpt { return podLabels("app", value) }

func zoneNode(name, zone string) *v1.Node { return mkNode(name, "4", "8Gi", withLabels("zone", zone)) }

// TestInterPodAffinityFilter follows upstream's InterPodAffinity Filter:
// the pod's required affinity is checked first (a failure no preemption
// can fix), then its required anti-affinity, then existing pods'
// anti-affinity against it. An affinity term's pods are those in the
// namespaces it lists, every namespace for namespaceSelector {}, else the
// pod's own namespace.
func TestInterPodAffinityFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
		{name: "pod anti-affinity", pod: mkPod("p", "", "", podLabels("app", "web"), func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: selector("app", "web"), TopologyKey: v1.LabelHostname}}}}
		}), node: info(big, mkPod("a", "", "", podLabels("app", "web"))), want: framework.ReasonAntiAffinityRules},
		{name: "existing pod's anti-affinity", pod: mkPod("p", "", "", podLabels("app", "web")),
			node: info(big, mkPod("a", "", "", func(p *v1.Pod) {
				p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: selector("app", "web"), TopologyKey: v1.LabelHostname}}}}
			})), want: framework.ReasonExistingAntiAffinity},
		{name: "pod affinity unmet", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: selector("app", "db"), TopologyKey: "zone"}}}}
		}), node: info(mkNode("z1", "4", "8Gi", withLabels("zone", "a"))),
			others: []*framework.NodeInfo{info(mkNode("z2", "4", "8Gi", withLabels("zone", "b")), mkPod("db", "", "", podLabels("app", "db")))},
			want:   framework.ReasonAffinityRules},
		{name: "pod affinity met in zone", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: selector("app", "db"), TopologyKey: "zone"}}}}
		}), node: info(mkNode("z1", "4", "8Gi", withLabels("zone", "b"))),
			others: []*framework.NodeInfo{info(mkNode("z2", "4", "8Gi", withLabels("zone", "b")), mkPod("db", "", "", podLabels("app", "db")))}},
		{name: "self-affine first pod", pod: mkPod("p", "", "", podLabels("app", "db"), func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{LabelSelector: selector("app", "db"), TopologyKey: "zone"}}}}
		}), node: info(mkNode("z1", "4", "8Gi", withLabels("zone", "a")))},
		{name: "anti-affinity across the zone", pod: mkPod("p", "", "", app("web"), requireAntiAffinity(term("zone", "web"))),
			node:   info(zoneNode("z1", "a")),
			others: []*framework.NodeInfo{info(zoneNode("z2", "a"), mkPod("w", "", "", app("web")))},
			want:   framework.ReasonAntiAffinityRules},
		{name: "anti-affinity only within the zone", pod: mkPod("p", "", "", app("web"), requireAntiAffinity(term("zone", "web"))),
			node:   info(zoneNode("z1", "a")),
			others: []*framework.NodeInfo{info(zoneNode("z2", "b"), mkPod("w", "", "", app("web")))}},
		{name: "anti-affinity on a node without the key", pod: mkPod("p", "", "", app("web"), requireAntiAffinity(term("zone", "web"))),
			node: info(big, mkPod("w", "", "", app("web")))},
		{name: "anti-affinity in another namespace does not apply", pod: mkPod("p", "", "", requireAntiAffinity(term(v1.LabelHostname, "web"))),
			node: info(big, mkPod("w", "", "", app("web"), inNamespace("other")))},
		{name: "anti-affinity listing the other namespace", pod: mkPod("p", "", "", requireAntiAffinity(term(v1.LabelHostname, "web", "other"))),
			node: info(big, mkPod("w", "", "", app("web"), inNamespace("other"))), want: framework.ReasonAntiAffinityRules},
		{name: "anti-affinity over all namespaces", pod: mkPod("p", "", "", requireAntiAffinity(allNamespaces(term(v1.LabelHostname, "web")))),
			node: info(big, mkPod("w", "", "", app("web"), inNamespace("other"))), want: framework.ReasonAntiAffinityRules},
		{name: "existing pod's anti-affinity across the zone", pod: mkPod("p", "", "", app("web")),
			node:   info(zoneNode("z1", "a")),
			others: []*framework.NodeInfo{info(zoneNode("z2", "a"), mkPod("a", "", "", requireAntiAffinity(term("zone", "web"))))},
			want:   framework.ReasonExistingAntiAffinity},
		// An existing pod's term defaults to the existing pod's namespace,
		// not the incoming pod's.
		{name: "existing pod's anti-affinity in its own namespace", pod: mkPod("p", "", "", app("web")),
			node: info(big, mkPod("a", "", "", inNamespace("other"), requireAntiAffinity(term(v1.LabelHostname, "web"))))},
		{name: "existing pod's anti-affinity listing the pod's namespace", pod: mkPod("p", "", "", app("web")),
			node: info(big, mkPod("a", "", "", inNamespace("other"), requireAntiAffinity(term(v1.LabelHostname, "web", "ns")))), want: framework.ReasonExistingAntiAffinity},
		{name: "pod affinity on a node without the key", pod: mkPod("p", "", "", requireAffinity(term("zone", "db"))),
			node:   info(big),
			others: []*framework.NodeInfo{info(zoneNode("z2", "b"), mkPod("db", "", "", app("db")))},
			want:   framework.ReasonAffinityRules},
		{name: "pod affinity in the same node", pod: mkPod("p", "", "", requireAffinity(term(v1.LabelHostname, "db"))),
			node: info(big, mkPod("db", "", "", app("db")))},
		{name: "self-affine first pod needs the key", pod: mkPod("p", "", "", app("db"), requireAffinity(term("zone", "db"))), node: info(big), want: framework.ReasonAffinityRules},
		// Once a pod of the group exists, the exception no longer applies.
		{name: "self-affine pod joins its group's zone", pod: mkPod("p", "", "", app("db"), requireAffinity(term("zone", "db"))),
			node:   info(zoneNode("z1", "a")),
			others: []*framework.NodeInfo{info(zoneNode("z2", "b"), mkPod("db", "", "", app("db")))},
			want:   framework.ReasonAffinityRules},
		// Upstream counts an existing pod for the required terms only if
		// it matches all of them: two terms met by two different pods are
		// not met.
		{name: "pod affinity terms met by different pods", pod: mkPod("p", "", "", requireAffinity(term("zone", "db"), v1.PodAffinityTerm{LabelSelector: selector("tier", "cache"), TopologyKey: "zone"})),
			node: info(zoneNode("z1", "a"), mkPod("db", "", "", app("db")), mkPod("cache", "", "", podLabels("tier", "cache"))),
			want: framework.ReasonAffinityRules},
		{name: "pod affinity terms met by one pod", pod: mkPod("p", "", "", requireAffinity(term("zone", "db"), v1.PodAffinityTerm{LabelSelector: selector("tier", "cache"), TopologyKey: "zone"})),
			node: info(zoneNode("z1", "a"), mkPod("db", "", "", app("db"), podLabels("tier", "cache")))},
		{name: "pod affinity in another namespace does not apply", pod: mkPod("p", "", "", requireAffinity(term(v1.LabelHostname, "db"))),
			node:   info(big),
			others: []*framework.NodeInfo{info(mkNode("m", "4", "8Gi"), mkPod("db", "", "", app("db"), inNamespace("other")))},
			want:   framework.ReasonAffinityRules},
		{name: "pod affinity listing the other namespace", pod: mkPod("p", "", "", requireAffinity(term(v1.LabelHostname, "db", "other"))),
			node: info(big, mkPod("db", "", "", app("db"), inNamespace("other")))},
		{name: "pod affinity listing only other namespaces", pod: mkPod("p", "", "", requireAffinity(term(v1.LabelHostname, "db", "other"))),
			node:   info(big, mkPod("db", "", "", app("db"))),
			others: []*framework.NodeInfo{info(mkNode("m", "4", "8Gi"), mkPod("db", "", "", app("db"), inNamespace("other")))},
			want:   framework.ReasonAffinityRules},
		{name: "pod affinity over all namespaces", pod: mkPod("p", "", "", requireAffinity(allNamespaces(term(v1.LabelHostname, "db")))),
			node: info(big, mkPod("db", "", "", app("db"), inNamespace("other")))},
		// The reason reported when several rules fail is the first in
		// upstream's order: affinity, which preemption cannot fix, before
		// an existing pod's anti-affinity, which it can.
		{name: "affinity is reported before existing anti-affinity", pod: mkPod("p", "", "", app("web"), requireAffinity(term("zone", "db"))),
			node:   info(zoneNode("z1", "a"), mkPod("a", "", "", requireAntiAffinity(term("zone", "web")))),
			others: []*framework.NodeInfo{info(zoneNode("z2", "b"), mkPod("db", "", "", app("db")))},
			want:   framework.ReasonAffinityRules},
		{name: "anti-affinity is reported before existing anti-affinity", pod: mkPod("p", "", "", app("web"), requireAntiAffinity(term(v1.LabelHostname, "db"))),
			node: info(big, mkPod("db", "", "", app("db"), requireAntiAffinity(term(v1.LabelHostname, "web")))),
			want: framework.ReasonAntiAffinityRules},
	})
}

// TestInterPodAffinityScore checks InterPodAffinity's raw score per node
// (upstream's Score, before NormalizeScore): for every existing pod a
// preferred term of the incoming pod matches, the term's weight (negated
// for anti-affinity) counts on every node in that pod's topology domain.
// Existing pods' terms count the same way when they match the incoming
// pod, their required affinity with weight 1 (hardPodAffinityWeight).
// Then ScoreStatic must order the nodes as the raw scores do.
func TestInterPodAffinityScore(t *testing.T) {
	a1, a2, b1, c1 := zoneNode("a1", "a"), zoneNode("a2", "a"), zoneNode("b1", "b"), zoneNode("c1", "c")
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*framework.NodeInfo
		want  map[string]int64
	}{
		{name: "affinity scores the matching pod's zone", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(a2), info(b1)},
			want:  map[string]int64{"a1": 10, "a2": 10, "b1": 0}},
		{name: "hostname topology scores only the pod's node", pod: mkPod("p", "", "", preferAffinity(weighted(10, term(v1.LabelHostname, "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(a2)},
			want:  map[string]int64{"a1": 10, "a2": 0}},
		{name: "weights are respected", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x")), weighted(50, term("zone", "y")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(b1, mkPod("y", "", "", app("y"))), info(c1)},
			want:  map[string]int64{"a1": 10, "b1": 50, "c1": 0}},
		{name: "matching pods add up", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x1", "", "", app("x"))), info(a2, mkPod("x2", "", "", app("x"))), info(b1, mkPod("x3", "", "", app("x")))},
			want:  map[string]int64{"a1": 20, "a2": 20, "b1": 10}},
		{name: "anti-affinity subtracts", pod: mkPod("p", "", "", preferAntiAffinity(weighted(20, term("zone", "y")))),
			nodes: []*framework.NodeInfo{info(a1), info(b1, mkPod("y", "", "", app("y")))},
			want:  map[string]int64{"a1": 0, "b1": -20}},
		{name: "affinity and anti-affinity add up", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x"))), preferAntiAffinity(weighted(20, term("zone", "y")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(a2, mkPod("y", "", "", app("y"))), info(b1, mkPod("x", "", "", app("x"))), info(c1)},
			want:  map[string]int64{"a1": -10, "a2": -10, "b1": 10, "c1": 0}},
		{name: "node without the key scores nothing", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(mkNode("bare", "4", "8Gi"), mkPod("x", "", "", app("x")))},
			want:  map[string]int64{"a1": 10, "bare": 0}},
		{name: "term defaults to the pod's namespace", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"), inNamespace("other"))), info(b1)},
			want:  map[string]int64{"a1": 0, "b1": 0}},
		{name: "term listing namespaces", pod: mkPod("p", "", "", preferAffinity(weighted(10, term("zone", "x", "other")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(b1, mkPod("x", "", "", app("x"), inNamespace("other")))},
			want:  map[string]int64{"a1": 0, "b1": 10}},
		{name: "term over all namespaces", pod: mkPod("p", "", "", preferAffinity(weighted(10, allNamespaces(term("zone", "x"))))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"))), info(b1, mkPod("x", "", "", app("x"), inNamespace("other"))), info(c1)},
			want:  map[string]int64{"a1": 10, "b1": 10, "c1": 0}},
		{name: "existing pod's preferred anti-affinity repels", pod: mkPod("p", "", "", app("p")),
			nodes: []*framework.NodeInfo{info(a1, mkPod("e", "", "", preferAntiAffinity(weighted(30, term("zone", "p"))))), info(a2), info(b1)},
			want:  map[string]int64{"a1": -30, "a2": -30, "b1": 0}},
		{name: "existing pod's preferred affinity attracts", pod: mkPod("p", "", "", app("p")),
			nodes: []*framework.NodeInfo{info(a1, mkPod("e", "", "", preferAffinity(weighted(30, term("zone", "p"))))), info(b1)},
			want:  map[string]int64{"a1": 30, "b1": 0}},
		{name: "existing pod's required affinity attracts with weight 1", pod: mkPod("p", "", "", app("p")),
			nodes: []*framework.NodeInfo{info(a1, mkPod("e", "", "", requireAffinity(term("zone", "p")))), info(b1)},
			want:  map[string]int64{"a1": 1, "b1": 0}},
		{name: "existing pod's terms look in its own namespace", pod: mkPod("p", "", "", app("p")),
			nodes: []*framework.NodeInfo{info(a1, mkPod("e", "", "", inNamespace("other"), preferAffinity(weighted(30, term("zone", "p"))))), info(b1)},
			want:  map[string]int64{"a1": 0, "b1": 0}},
		{name: "both sides' terms add up", pod: mkPod("p", "", "", app("p"), preferAffinity(weighted(10, term("zone", "x")))),
			nodes: []*framework.NodeInfo{info(a1, mkPod("x", "", "", app("x"), preferAntiAffinity(weighted(30, term("zone", "p"))))), info(b1, mkPod("x", "", "", app("x"))), info(c1)},
			want:  map[string]int64{"a1": -20, "b1": 10, "c1": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, status := PreFilter(framework.NewPodInfo(tt.pod), cluster(tt.nodes))
			if status != nil {
				t.Fatal(status.Reasons)
			}
			if st.affinity == nil {
				t.Fatal("no InterPodAffinity state")
			}
			got := map[string]int64{}
			for _, n := range tt.nodes {
				got[n.Name] = st.affinity.score(n)
			}
			for name, want := range tt.want {
				if got[name] != want {
					t.Errorf("%s: raw score %d, want %d (all: %v)", name, got[name], want, got)
				}
			}
			static := totalScores(t, tt.pod, tt.nodes, false)
			for _, m := range tt.nodes {
				for _, n := range tt.nodes {
					if (got[m.Name] > got[n.Name]) != (static[m.Name] > static[n.Name]) {
						t.Errorf("raw %s=%d %s=%d, but ScoreStatic %d and %d", m.Name, got[m.Name], n.Name, got[n.Name], static[m.Name], static[n.Name])
					}
				}
			}
		})
	}
}

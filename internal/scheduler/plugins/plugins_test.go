package plugins

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

type cluster []*framework.NodeInfo

func (c cluster) Nodes() []*framework.NodeInfo { return c }
func (c cluster) HavePodsWithAffinity() bool {
	for _, n := range c {
		if n.PodsWithAffinity > 0 {
			return true
		}
	}
	return false
}

type nodeOpt func(*v1.Node)

func mkNode(name, cpu, mem string, opts ...nodeOpt) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("3")}}}
	for _, o := range opts {
		o(n)
	}
	return n
}

func withLabels(kv ...string) nodeOpt {
	return func(n *v1.Node) {
		for i := 0; i < len(kv); i += 2 {
			n.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withTaint(key, value string, effect v1.TaintEffect) nodeOpt {
	return func(n *v1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	}
}

func withAlloc(name v1.ResourceName, q string) nodeOpt {
	return func(n *v1.Node) { n.Status.Allocatable[name] = resource.MustParse(q) }
}

type podOpt func(*v1.Pod)

var uidSeq int

func mkPod(name, cpu, mem string, opts ...podOpt) *v1.Pod {
	uidSeq++
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name + string(rune('a'+uidSeq%26))), Labels: map[string]string{}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}}}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse(mem)
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func podLabels(kv ...string) podOpt {
	return func(p *v1.Pod) {
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func info(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(n.Name)
	ni.SetNode(n)
	for _, p := range pods {
		ni.AddPod(framework.NewPodInfo(p))
	}
	return ni
}

func selector(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func TestFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	tests := []struct {
		name string
		pod  *v1.Pod
		node *framework.NodeInfo
		// others are extra nodes in the cluster (topology counts).
		others []*framework.NodeInfo
		want   string // "" = fits; else the reasons joined by "; "
	}{
		{name: "fits", pod: mkPod("p", "1", "1Gi"), node: info(big)},
		{name: "insufficient cpu", pod: mkPod("p", "5", "1Gi"), node: info(big), want: "Insufficient cpu"},
		{name: "insufficient cpu and memory", pod: mkPod("p", "5", "9Gi"), node: info(big), want: "Insufficient cpu; Insufficient memory"},
		{name: "counts bound pods", pod: mkPod("p", "2", ""), node: info(big, mkPod("a", "3", "")), want: "Insufficient cpu"},
		{name: "too many pods", pod: mkPod("p", "", ""), node: info(big, mkPod("a", "", ""), mkPod("b", "", ""), mkPod("c", "", "")), want: "Too many pods"},
		{name: "init container larger than app containers", pod: mkPod("p", "1", "", func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4500m")}}}}
		}), node: info(big), want: "Insufficient cpu"},
		{name: "overhead counts", pod: mkPod("p", "3900m", "", func(p *v1.Pod) {
			p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("200m")}
		}), node: info(big), want: "Insufficient cpu"},
		{name: "extended resource missing", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}), node: info(big), want: "Insufficient example.com/gpu"},
		{name: "extended resource present", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse("1")
		}), node: info(mkNode("g", "4", "8Gi", withAlloc("example.com/gpu", "2")))},
		{name: "ephemeral storage", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests[v1.ResourceEphemeralStorage] = resource.MustParse("2Gi")
		}), node: info(mkNode("e", "4", "8Gi", withAlloc(v1.ResourceEphemeralStorage, "1Gi"))), want: "Insufficient ephemeral-storage"},
		{name: "node name mismatch", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeName = "other" }), node: info(big), want: framework.ReasonNodeName},
		{name: "unschedulable node", pod: mkPod("p", "", ""), node: info(mkNode("u", "4", "8Gi", func(n *v1.Node) { n.Spec.Unschedulable = true })), want: framework.ReasonNodeUnschedulable},
		{name: "unschedulable node tolerated", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
		}), node: info(mkNode("u", "4", "8Gi", func(n *v1.Node) { n.Spec.Unschedulable = true }))},
		{name: "untolerated taint", pod: mkPod("p", "", ""), node: info(mkNode("t", "4", "8Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule))), want: "node(s) had untolerated taint {dedicated: gpu}"},
		{name: "prefer-no-schedule taint does not filter", pod: mkPod("p", "", ""), node: info(mkNode("t", "4", "8Gi", withTaint("soft", "x", v1.TaintEffectPreferNoSchedule)))},
		{name: "tolerated taint", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
		}), node: info(mkNode("t", "4", "8Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule)))},
		{name: "node selector mismatch", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node: info(big), want: framework.ReasonNodeAffinity},
		{name: "node selector match", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node: info(mkNode("s", "4", "8Gi", withLabels("disk", "ssd")))},
		{name: "required node affinity", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}}
		}), node: info(mkNode("z", "4", "8Gi", withLabels("zone", "c"))), want: framework.ReasonNodeAffinity},
		{name: "host port conflict", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}} }),
			node: info(big, mkPod("a", "", "", func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 8080, HostIP: "10.0.0.1"}}
			})), want: framework.ReasonNodePorts},
		{name: "host port other protocol", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80, Protocol: v1.ProtocolUDP}}
		}), node: info(big, mkPod("a", "", "", func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}} }))},
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
		{name: "spread skew exceeded", pod: mkPod("p", "", "", podLabels("app", "web"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: selector("app", "web")}}
		}), node: info(mkNode("z1", "4", "8Gi", withLabels("zone", "a")), mkPod("w1", "", "", podLabels("app", "web"))),
			others: []*framework.NodeInfo{info(mkNode("z2", "4", "8Gi", withLabels("zone", "b")))},
			want:   framework.ReasonSpread},
		{name: "spread within skew", pod: mkPod("p", "", "", podLabels("app", "web"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: selector("app", "web")}}
		}), node: info(mkNode("z2", "4", "8Gi", withLabels("zone", "b"))),
			others: []*framework.NodeInfo{info(mkNode("z1", "4", "8Gi", withLabels("zone", "a")), mkPod("w1", "", "", podLabels("app", "web")))}},
		{name: "spread missing label", pod: mkPod("p", "", "", podLabels("app", "web"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: selector("app", "web")}}
		}), node: info(big), want: framework.ReasonSpreadMissingLabel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl := append(cluster{tt.node}, tt.others...)
			st, status := PreFilter(framework.NewPodInfo(tt.pod), cl)
			if status != nil {
				t.Fatalf("prefilter: %v", status.Reasons)
			}
			got := ""
			if s := st.Filter(tt.node); s != nil {
				got = strings.Join(s.Reasons, "; ")
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNominatedCountsAgainstFit(t *testing.T) {
	n := info(mkNode("n", "4", "8Gi"))
	st, _ := PreFilter(framework.NewPodInfo(mkPod("p", "2", "")), cluster{n})
	if s := st.Filter(n); s != nil {
		t.Fatalf("fits without nominated pods: %v", s.Reasons)
	}
	st.Nominated = map[string]*framework.Resource{"n": {MilliCPU: 3000, AllowedPodNumber: 1}}
	if s := st.Filter(n); s == nil {
		t.Fatal("nominated pod's cpu not counted")
	}
}

func TestScores(t *testing.T) {
	empty := info(mkNode("empty", "4", "8Gi"))
	busy := info(mkNode("busy", "4", "8Gi"), mkPod("a", "3", "6Gi"))
	tainted := info(mkNode("tainted", "4", "8Gi", withTaint("soft", "x", v1.TaintEffectPreferNoSchedule)))
	ssd := info(mkNode("ssd", "4", "8Gi", withLabels("disk", "ssd")))
	tests := []struct {
		name       string
		pod        *v1.Pod
		nodes      []*framework.NodeInfo
		better     string // node that must score strictly higher than worse
		worse      string
		useStatic  bool
		useResTies bool
	}{
		{name: "least allocated prefers empty", pod: mkPod("p", "500m", "1Gi"), nodes: []*framework.NodeInfo{empty, busy}, better: "empty", worse: "busy"},
		{name: "prefer-no-schedule taint", pod: mkPod("p", "500m", "1Gi"), nodes: []*framework.NodeInfo{empty, tainted}, better: "empty", worse: "tainted", useStatic: true},
		{name: "preferred node affinity", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 10,
				Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}}}
		}), nodes: []*framework.NodeInfo{empty, ssd}, better: "ssd", worse: "empty", useStatic: true},
		{name: "preferred anti-affinity", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{{Weight: 5,
				PodAffinityTerm: v1.PodAffinityTerm{LabelSelector: selector("app", "x"), TopologyKey: v1.LabelHostname}}}}}
		}), nodes: []*framework.NodeInfo{empty, info(mkNode("withx", "4", "8Gi"), mkPod("x", "", "", podLabels("app", "x")))}, better: "empty", worse: "withx", useStatic: true},
		{name: "soft spread", pod: mkPod("p", "", "", podLabels("app", "w"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: selector("app", "w")}}
		}), nodes: []*framework.NodeInfo{empty, info(mkNode("withw", "4", "8Gi"), mkPod("w", "", "", podLabels("app", "w")))}, better: "empty", worse: "withw", useStatic: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, status := PreFilter(framework.NewPodInfo(tt.pod), cluster(tt.nodes))
			if status != nil {
				t.Fatal(status.Reasons)
			}
			static := st.ScoreStatic(tt.nodes, nil)
			score := map[string]int64{}
			for i, n := range tt.nodes {
				score[n.Name] = static[i]
				if !tt.useStatic {
					score[n.Name] += st.ScoreResources(n)
				}
			}
			if score[tt.better] <= score[tt.worse] {
				t.Fatalf("%s scored %d, %s scored %d", tt.better, score[tt.better], tt.worse, score[tt.worse])
			}
		})
	}
}

func TestBalancedAllocation(t *testing.T) {
	n := info(mkNode("n", "4", "8Gi"))
	pi := framework.NewPodInfo(mkPod("p", "2", "4Gi"))
	if got := balanced(pi, n); got != 100 {
		t.Fatalf("equal fractions: %d, want 100", got)
	}
	pi = framework.NewPodInfo(mkPod("p", "4", "0"))
	if got := balanced(pi, n); got != 50 {
		t.Fatalf("cpu 1.0 memory 0: %d, want 50", got)
	}
}

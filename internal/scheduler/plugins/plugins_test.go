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
		if len(n.PodsWithAffinity) > 0 {
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

// filterCase is one Filter run: pod against node, with others completing
// the cluster PreFilter sees (topology counts, existing pods' terms).
type filterCase struct {
	name   string
	pod    *v1.Pod
	node   *framework.NodeInfo
	others []*framework.NodeInfo
	want   string // "" = fits; else the reasons joined by "; "
}

func runFilterCases(t *testing.T, tests []filterCase) {
	t.Helper()
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

// orderCase checks one score's effect as an order: better must score
// strictly higher than worse. static leaves out the resource scores
// (LeastAllocated, BalancedAllocation), which would otherwise favour the
// emptier node in cases that are about something else.
type orderCase struct {
	name          string
	pod           *v1.Pod
	nodes         []*framework.NodeInfo
	better, worse string
	static        bool
}

func runOrderCases(t *testing.T, tests []orderCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			score := totalScores(t, tt.pod, tt.nodes, !tt.static)
			if score[tt.better] <= score[tt.worse] {
				t.Fatalf("%s scored %d, %s scored %d", tt.better, score[tt.better], tt.worse, score[tt.worse])
			}
		})
	}
}

// totalScores is the weighted sum of the scores per node name, as the core
// adds them up; withResources adds the resource scores.
func totalScores(t *testing.T, pod *v1.Pod, nodes []*framework.NodeInfo, withResources bool) map[string]int64 {
	t.Helper()
	st, status := PreFilter(framework.NewPodInfo(pod), cluster(nodes))
	if status != nil {
		t.Fatal(status.Reasons)
	}
	static := st.ScoreStatic(nodes, nil)
	score := map[string]int64{}
	for i, n := range nodes {
		score[n.Name] = static[i]
		if withResources {
			score[n.Name] += st.ScoreResources(n)
		}
	}
	return score
}

func TestNodeNameFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
		{name: "node name match", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeName = "n" }), node: info(big)},
		{name: "node name mismatch", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeName = "other" }), node: info(big), want: framework.ReasonNodeName},
	})
}

func TestNodeAffinityFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
		{name: "node selector mismatch", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node: info(big), want: framework.ReasonNodeAffinity},
		{name: "node selector match", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} }), node: info(mkNode("s", "4", "8Gi", withLabels("disk", "ssd")))},
		{name: "required node affinity", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{"a", "b"}}}}}}}}
		}), node: info(mkNode("z", "4", "8Gi", withLabels("zone", "c"))), want: framework.ReasonNodeAffinity},
	})
}

func TestNodeAffinityScore(t *testing.T) {
	empty := info(mkNode("empty", "4", "8Gi"))
	ssd := info(mkNode("ssd", "4", "8Gi", withLabels("disk", "ssd")))
	runOrderCases(t, []orderCase{
		{name: "preferred node affinity", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 10,
				Preference: v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: v1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}}}}
		}), nodes: []*framework.NodeInfo{empty, ssd}, better: "ssd", worse: "empty", static: true},
	})
}

func TestNodePortsFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
		{name: "host port conflict", pod: mkPod("p", "", "", func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}} }),
			node: info(big, mkPod("a", "", "", func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 8080, HostIP: "10.0.0.1"}}
			})), want: framework.ReasonNodePorts},
		{name: "host port other protocol", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80, Protocol: v1.ProtocolUDP}}
		}), node: info(big, mkPod("a", "", "", func(p *v1.Pod) { p.Spec.Containers[0].Ports = []v1.ContainerPort{{HostPort: 80, ContainerPort: 80}} }))},
	})
}

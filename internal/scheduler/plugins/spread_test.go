package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

func TestPodTopologySpreadFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
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
	})
}

func TestPodTopologySpreadScore(t *testing.T) {
	empty := info(mkNode("empty", "4", "8Gi"))
	runOrderCases(t, []orderCase{
		{name: "soft spread", pod: mkPod("p", "", "", podLabels("app", "w"), func(p *v1.Pod) {
			p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: selector("app", "w")}}
		}), nodes: []*framework.NodeInfo{empty, info(mkNode("withw", "4", "8Gi"), mkPod("w", "", "", podLabels("app", "w")))}, better: "empty", worse: "withw", static: true},
	})
}

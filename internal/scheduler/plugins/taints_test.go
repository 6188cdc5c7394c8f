package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

func tolerate(tols ...v1.Toleration) podOpt {
	return func(p *v1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, tols...) }
}

func seconds(s int64) *int64 { return &s }

// TestTaintTolerationFilter covers TaintToleration's filter and
// NodeUnschedulable, which is a taint in all but name. Upstream rejects a
// node for the first NoSchedule or NoExecute taint no toleration matches;
// tolerationSeconds bounds how long a running pod stays after a NoExecute
// taint appears, and does not stop the pod from being placed.
func TestTaintTolerationFilter(t *testing.T) {
	noExec := mkNode("x", "4", "8Gi", withTaint("evict", "me", v1.TaintEffectNoExecute))
	runFilterCases(t, []filterCase{
		{name: "unschedulable node", pod: mkPod("p", "", ""), node: info(mkNode("u", "4", "8Gi", func(n *v1.Node) { n.Spec.Unschedulable = true })), want: framework.ReasonNodeUnschedulable},
		{name: "unschedulable node tolerated", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
		}), node: info(mkNode("u", "4", "8Gi", func(n *v1.Node) { n.Spec.Unschedulable = true }))},
		{name: "untolerated taint", pod: mkPod("p", "", ""), node: info(mkNode("t", "4", "8Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule))), want: "node(s) had untolerated taint {dedicated: gpu}"},
		{name: "prefer-no-schedule taint does not filter", pod: mkPod("p", "", ""), node: info(mkNode("t", "4", "8Gi", withTaint("soft", "x", v1.TaintEffectPreferNoSchedule)))},
		{name: "tolerated taint", pod: mkPod("p", "", "", func(p *v1.Pod) {
			p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "gpu", Effect: v1.TaintEffectNoSchedule}}
		}), node: info(mkNode("t", "4", "8Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule)))},
		{name: "untolerated NoExecute taint", pod: mkPod("p", "", ""), node: info(noExec), want: "node(s) had untolerated taint {evict: me}"},
		{name: "NoExecute taint tolerated", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpEqual, Value: "me", Effect: v1.TaintEffectNoExecute})), node: info(noExec)},
		{name: "NoExecute taint tolerated for a while", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(30)})), node: info(noExec)},
		{name: "NoExecute taint tolerated for zero seconds", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds(0)})), node: info(noExec)},
		{name: "NoSchedule toleration does not cover NoExecute", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpEqual, Value: "me", Effect: v1.TaintEffectNoSchedule})), node: info(noExec), want: "node(s) had untolerated taint {evict: me}"},
		{name: "toleration with no effect covers NoExecute", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpExists})), node: info(noExec)},
		{name: "toleration of another value", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "evict", Operator: v1.TolerationOpEqual, Value: "you", Effect: v1.TaintEffectNoExecute})), node: info(noExec), want: "node(s) had untolerated taint {evict: me}"},
		{name: "empty key Exists tolerates every taint", pod: mkPod("p", "", "", tolerate(v1.Toleration{Operator: v1.TolerationOpExists})),
			node: info(mkNode("x", "4", "8Gi", withTaint("evict", "me", v1.TaintEffectNoExecute), withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule)))},
		{name: "first untolerated taint is named", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			node: info(mkNode("x", "4", "8Gi", withTaint("dedicated", "gpu", v1.TaintEffectNoSchedule), withTaint("evict", "me", v1.TaintEffectNoExecute))), want: "node(s) had untolerated taint {evict: me}"},
		{name: "unschedulable is reported before taints", pod: mkPod("p", "", ""), node: info(mkNode("u", "4", "8Gi", withTaint("evict", "me", v1.TaintEffectNoExecute), func(n *v1.Node) { n.Spec.Unschedulable = true })), want: framework.ReasonNodeUnschedulable},
		{name: "tolerating unschedulable does not tolerate NoExecute", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			node: info(mkNode("u", "4", "8Gi", withTaint("evict", "me", v1.TaintEffectNoExecute), func(n *v1.Node) { n.Spec.Unschedulable = true })), want: "node(s) had untolerated taint {evict: me}"},
	})
}

func TestTaintTolerationScore(t *testing.T) {
	empty := info(mkNode("empty", "4", "8Gi"))
	tainted := info(mkNode("tainted", "4", "8Gi", withTaint("soft", "x", v1.TaintEffectPreferNoSchedule)))
	twice := info(mkNode("twice", "4", "8Gi", withTaint("soft", "x", v1.TaintEffectPreferNoSchedule), withTaint("soft2", "y", v1.TaintEffectPreferNoSchedule)))
	runOrderCases(t, []orderCase{
		{name: "prefer-no-schedule taint", pod: mkPod("p", "500m", "1Gi"), nodes: []*framework.NodeInfo{empty, tainted}, better: "empty", worse: "tainted", static: true},
		{name: "fewer intolerable taints is better", pod: mkPod("p", "", ""), nodes: []*framework.NodeInfo{tainted, twice}, better: "tainted", worse: "twice", static: true},
		{name: "tolerated prefer-no-schedule taint does not count", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule})),
			nodes: []*framework.NodeInfo{tainted, twice}, better: "tainted", worse: "twice", static: true},
		// Only tolerations whose effect is PreferNoSchedule or empty count
		// for scoring, as upstream.
		{name: "NoSchedule toleration does not cover prefer-no-schedule", pod: mkPod("p", "", "", tolerate(v1.Toleration{Key: "soft", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule})),
			nodes: []*framework.NodeInfo{empty, tainted}, better: "empty", worse: "tainted", static: true},
	})
}

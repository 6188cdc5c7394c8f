package plugins

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

func TestNodeResourcesFitFilter(t *testing.T) {
	big := mkNode("n", "4", "8Gi")
	runFilterCases(t, []filterCase{
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
	})
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

func TestLeastAllocatedScore(t *testing.T) {
	empty := info(mkNode("empty", "4", "8Gi"))
	busy := info(mkNode("busy", "4", "8Gi"), mkPod("a", "3", "6Gi"))
	runOrderCases(t, []orderCase{
		{name: "least allocated prefers empty", pod: mkPod("p", "500m", "1Gi"), nodes: []*framework.NodeInfo{empty, busy}, better: "empty", worse: "busy"},
	})
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

package cache

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
)

func node(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}}
}

func pod(uid, nodeName, cpu string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "ns", UID: types.UID(uid)},
		Spec: v1.PodSpec{NodeName: nodeName, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func requested(c *Cache, name string) (cpu int64, pods int) {
	c.View(func(s Snapshot) {
		if n := s.Node(name); n != nil {
			cpu, pods = n.Requested.MilliCPU, len(n.Pods)
		}
	})
	return
}

func TestAssumeConfirmForget(t *testing.T) {
	c := New(time.Second)
	c.AddNode(node("n1"))
	p := pod("a", "", "1")
	if err := c.AssumePod(framework.NewPodInfo(p), "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(framework.NewPodInfo(p), "n1"); err == nil {
		t.Fatal("assuming twice succeeded")
	}
	if cpu, n := requested(c, "n1"); cpu != 1000 || n != 1 {
		t.Fatalf("after assume: cpu %d pods %d", cpu, n)
	}
	// Confirmation from the informer replaces, not doubles.
	bound := p.DeepCopy()
	bound.Spec.NodeName = "n1"
	c.AddPod(bound)
	if cpu, n := requested(c, "n1"); cpu != 1000 || n != 1 || c.IsAssumed(p) {
		t.Fatalf("after confirm: cpu %d pods %d assumed %v", cpu, n, c.IsAssumed(p))
	}
	// A confirmed pod is not forgotten.
	c.ForgetPod(p)
	if cpu, _ := requested(c, "n1"); cpu != 1000 {
		t.Fatalf("forget removed a confirmed pod")
	}
	c.RemovePod(bound)
	if cpu, n := requested(c, "n1"); cpu != 0 || n != 0 {
		t.Fatalf("after remove: cpu %d pods %d", cpu, n)
	}

	q := pod("b", "", "2")
	_ = c.AssumePod(framework.NewPodInfo(q), "n1")
	c.ForgetPod(q)
	if cpu, _ := requested(c, "n1"); cpu != 0 {
		t.Fatalf("after forget: cpu %d", cpu)
	}
}

func TestExpiry(t *testing.T) {
	c := New(time.Second)
	c.AddNode(node("n1"))
	p := pod("a", "", "1")
	_ = c.AssumePod(framework.NewPodInfo(p), "n1")
	now := time.Unix(1000, 0)
	if n := c.Cleanup(now.Add(time.Hour)); n != 0 {
		t.Fatal("expired while binding in flight")
	}
	c.FinishBinding(p, now)
	if n := c.Cleanup(now.Add(500 * time.Millisecond)); n != 0 {
		t.Fatal("expired before ttl")
	}
	if n := c.Cleanup(now.Add(2 * time.Second)); n != 1 {
		t.Fatal("not expired after ttl")
	}
}

func TestPodBeforeNodeAndNodeRemoval(t *testing.T) {
	c := New(0)
	c.AddPod(pod("a", "n2", "1"))
	if c.NodeCount() != 0 {
		t.Fatal("placeholder node listed")
	}
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	if cpu, _ := requested(c, "n2"); cpu != 1000 {
		t.Fatalf("pod bound before node not counted: %d", cpu)
	}
	c.RemoveNode("n1")
	c.View(func(s Snapshot) {
		if len(s.Nodes()) != 1 || s.Nodes()[0].Name != "n2" || s.Nodes()[0].Index != 0 {
			t.Fatalf("list after removal: %+v", s.Nodes())
		}
	})
}

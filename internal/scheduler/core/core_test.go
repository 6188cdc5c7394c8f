package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/scheduler/cache"
	"github.com/myriad-k8s/myriad/internal/scheduler/framework"
	"github.com/myriad-k8s/myriad/internal/scheduler/queue"
)

// recorder is a Binder and Reporter that keeps everything in memory and
// confirms bindings into the cache, as the pod informer would.
type recorder struct {
	cache     *cache.Cache
	mu        sync.Mutex
	bound     map[string]string // pod name -> node
	unsch     map[string]string // pod name -> message
	preempted map[string][]string
}

func newRecorder(c *cache.Cache) *recorder {
	return &recorder{cache: c, bound: map[string]string{}, unsch: map[string]string{}, preempted: map[string][]string{}}
}

func (r *recorder) Bind(_ context.Context, pod *v1.Pod, node string) error {
	r.mu.Lock()
	r.bound[pod.Name] = node
	r.mu.Unlock()
	b := pod.DeepCopy()
	b.Spec.NodeName = node
	r.cache.AddPod(b)
	return nil
}
func (r *recorder) Scheduled(context.Context, *v1.Pod, string) {}
func (r *recorder) Unschedulable(_ context.Context, pod *v1.Pod, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unsch[pod.Name] = msg
}
func (r *recorder) Preempt(_ context.Context, pod *v1.Pod, node string, victims []*v1.Pod) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range victims {
		r.preempted[pod.Name] = append(r.preempted[pod.Name], v.Name)
	}
	return nil
}

func node(name, cpu string, labels map[string]string, taints ...v1.Taint) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{Taints: taints},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Gi"), v1.ResourcePods: resource.MustParse("110")}}}
}

func pod(name, cpu string, prio int32) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: map[string]string{"app": "x"}},
		Spec: v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

type harness struct {
	c   *cache.Cache
	q   *queue.Queue
	s   *Scheduler
	r   *recorder
	clk *clocktesting.FakeClock
}

func newHarness(t *testing.T, cfg Config) *harness {
	c := cache.New(0)
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	q := queue.New(queue.Config{Clock: clk})
	r := newRecorder(c)
	cfg.Binder, cfg.Reporter, cfg.Seed = r, r, 1
	s, err := New(cfg, c, q)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{c: c, q: q, s: s, r: r, clk: clk}
}

func (h *harness) add(p *v1.Pod) { h.q.Add(framework.NewPodInfo(p), EquivalenceClass(p)) }

// drain schedules until the active queue is empty.
func (h *harness) drain(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for h.q.Lengths().Active > 0 {
		if err := h.s.ScheduleOne(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h.s.WaitForBindings()
}

func TestNoOvercommit(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"plain", Config{Parallelism: 1}},
		{"equivalence", Config{EquivalenceClasses: true, Parallelism: 1}},
		{"parallel sampled", Config{EquivalenceClasses: true, Parallelism: 4, PercentageOfNodesToScore: 10}},
		{"rebuilt snapshot", Config{EquivalenceClasses: true, RebuildSnapshot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			for i := 0; i < 600; i++ {
				h.c.AddNode(node(fmt.Sprintf("n%d", i), "4", nil))
			}
			// 600 nodes x 4 cpu = 2400 cpu; 2500 pods of 1 cpu: 100 must fail.
			for i := 0; i < 2500; i++ {
				h.add(pod(fmt.Sprintf("p%d", i), "1", 0))
			}
			h.drain(t)
			if len(h.r.bound) != 2400 || len(h.r.unsch) != 100 {
				t.Fatalf("bound %d, unschedulable %d", len(h.r.bound), len(h.r.unsch))
			}
			perNode := map[string]int{}
			for _, n := range h.r.bound {
				perNode[n]++
			}
			for n, c := range perNode {
				if c > 4 {
					t.Fatalf("node %s got %d pods of 1 cpu on 4 cpu", n, c)
				}
			}
			for _, msg := range h.r.unsch {
				if msg != "0/600 nodes are available: 600 Insufficient cpu. preemption: 0/600 nodes are available: 600 No preemption victims found for incoming pod." {
					t.Fatalf("message %q", msg)
				}
				break
			}
		})
	}
}

func TestSpreadsByLeastAllocated(t *testing.T) {
	h := newHarness(t, Config{EquivalenceClasses: true})
	for i := 0; i < 10; i++ {
		h.c.AddNode(node(fmt.Sprintf("n%d", i), "10", nil))
	}
	for i := 0; i < 50; i++ {
		h.add(pod(fmt.Sprintf("p%d", i), "1", 0))
	}
	h.drain(t)
	perNode := map[string]int{}
	for _, n := range h.r.bound {
		perNode[n]++
	}
	for n, c := range perNode {
		if c != 5 {
			t.Fatalf("node %s has %d pods, want 5 each: %v", n, c, perNode)
		}
	}
}

func TestUnschedulableMessageMixedReasons(t *testing.T) {
	h := newHarness(t, Config{DisablePreemption: true})
	h.c.AddNode(node("small1", "1", nil))
	h.c.AddNode(node("small2", "1", nil))
	h.c.AddNode(node("tainted", "8", nil, v1.Taint{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}))
	h.add(pod("big", "2", 0))
	h.drain(t)
	want := "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, 2 Insufficient cpu."
	if got := h.r.unsch["big"]; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if l := h.q.Lengths(); l.Unschedulable != 1 {
		t.Fatalf("queue %+v", l)
	}
	// A node with room arrives: the pod is retried and placed.
	h.c.AddNode(node("roomy", "4", nil))
	h.clk.Step(queue.DefaultInitialBackoff)
	h.q.MoveAllToActiveOrBackoff()
	h.drain(t)
	if h.r.bound["big"] != "roomy" {
		t.Fatalf("after node add bound to %q", h.r.bound["big"])
	}
}

func TestPreemptionPicksLowestPriorityVictims(t *testing.T) {
	h := newHarness(t, Config{})
	h.c.AddNode(node("a", "2", nil))
	h.c.AddNode(node("b", "2", nil))
	bind := func(p *v1.Pod, n string) {
		p.Spec.NodeName = n
		h.c.AddPod(p)
	}
	bind(pod("a-low", "1", 1), "a")
	bind(pod("a-mid", "1", 5), "a")
	bind(pod("b-mid1", "1", 5), "b")
	bind(pod("b-mid2", "1", 5), "b")
	h.add(pod("high", "1", 10))
	h.drain(t)
	if got := h.r.preempted["high"]; len(got) != 1 || got[0] != "a-low" {
		t.Fatalf("victims %v, want [a-low]", got)
	}
	// Equal priority is never preempted.
	h2 := newHarness(t, Config{})
	h2.c.AddNode(node("a", "1", nil))
	p := pod("same", "1", 10)
	p.Spec.NodeName = "a"
	h2.c.AddPod(p)
	h2.add(pod("other", "1", 10))
	h2.drain(t)
	if len(h2.r.preempted) != 0 || !strings.Contains(h2.r.unsch["other"], "No preemption victims") {
		t.Fatalf("preempted %v, message %q", h2.r.preempted, h2.r.unsch["other"])
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for _, tc := range []struct{ pct, nodes, want int }{
		{0, 50, 50}, {0, 100, 100}, {0, 1000, 420}, {0, 5000, 500}, {0, 10000, 500}, {0, 20000, 1000}, {100, 5000, 5000}, {10, 500, 100},
	} {
		if got := numFeasibleNodesToFind(tc.pct, tc.nodes); got != tc.want {
			t.Errorf("pct %d nodes %d: %d, want %d", tc.pct, tc.nodes, got, tc.want)
		}
	}
}

func TestEquivalenceClass(t *testing.T) {
	a, b := pod("a", "1", 0), pod("b", "1", 0)
	if EquivalenceClass(a) != EquivalenceClass(b) || EquivalenceClass(a) == "" {
		t.Fatal("identical pods in different classes")
	}
	c := pod("c", "2", 0)
	if EquivalenceClass(a) == EquivalenceClass(c) {
		t.Fatal("different requests in one class")
	}
	d := pod("d", "1", 0)
	d.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule}}
	if EquivalenceClass(d) != "" {
		t.Fatal("spread-constrained pod batched")
	}
}

type pdbs []*policyv1.PodDisruptionBudget

func (p pdbs) PDBs() []*policyv1.PodDisruptionBudget { return p }

func TestPreemptionPrefersNoPDBViolation(t *testing.T) {
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guard", Namespace: "ns"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	h := newHarness(t, Config{PDBs: pdbs{budget}})
	h.c.AddNode(node("a", "1", nil))
	h.c.AddNode(node("b", "1", nil))
	guarded := pod("guarded", "1", 1)
	guarded.Labels["guarded"] = "yes"
	guarded.Spec.NodeName = "a"
	h.c.AddPod(guarded)
	// Higher priority than guarded, still lower than the preemptor: the
	// PDB outweighs victim priority, as upstream.
	free := pod("free", "1", 5)
	free.Spec.NodeName = "b"
	h.c.AddPod(free)
	h.add(pod("high", "1", 10))
	h.drain(t)
	if got := h.r.preempted["high"]; len(got) != 1 || got[0] != "free" {
		t.Fatalf("victims %v, want [free]", got)
	}
}

func TestPreemptionPolicyNever(t *testing.T) {
	h := newHarness(t, Config{})
	h.c.AddNode(node("a", "1", nil))
	low := pod("low", "1", 1)
	low.Spec.NodeName = "a"
	h.c.AddPod(low)
	never := v1.PreemptNever
	p := pod("high", "1", 10)
	p.Spec.PreemptionPolicy = &never
	h.add(p)
	h.drain(t)
	if len(h.r.preempted) != 0 || !strings.HasSuffix(h.r.unsch["high"], "preemption: not eligible due to preemptionPolicy=Never.") {
		t.Fatalf("preempted %v, message %q", h.r.preempted, h.r.unsch["high"])
	}
}

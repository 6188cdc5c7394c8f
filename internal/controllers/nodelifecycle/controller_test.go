package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

func node(name, zone string, ready corev1.ConditionStatus) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone}}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.NewTime(t0)}}
	}
	return n
}

func lease(name string, renew time.Time) *coordinationv1.Lease {
	mt := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: LeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &mt}}
}

func pod(name, nodeName string, tolerate *int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)}, Spec: corev1.PodSpec{NodeName: nodeName}}
	if tolerate != nil {
		p.Spec.Tolerations = []corev1.Toleration{
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerate},
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tolerate},
		}
	}
	return p
}

type harness struct {
	t      *testing.T
	c      *Controller
	client *fake.Clientset
	clock  *testingclock.FakeClock
	ctx    context.Context
}

func newHarness(t *testing.T, opts Options, objs ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	clk := testingclock.NewFakeClock(t0)
	c, err := New(&controllerctx.Context{Client: client, Informers: f, Clock: clk, Logger: slog.Default()}, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return &harness{t: t, c: c, client: client, clock: clk, ctx: ctx}
}

// settle waits until the controller's node cache matches the API.
func (h *harness) settle() {
	h.t.Helper()
	for {
		api, _ := h.client.CoreV1().Nodes().List(h.ctx, metav1.ListOptions{})
		same := true
		for i := range api.Items {
			n, err := h.c.nodes.Get(api.Items[i].Name)
			if err != nil || fmt.Sprint(n.Spec, n.Status.Conditions) != fmt.Sprint(api.Items[i].Spec, api.Items[i].Status.Conditions) {
				same = false
			}
		}
		leases, _ := h.client.CoordinationV1().Leases(LeaseNamespace).List(h.ctx, metav1.ListOptions{})
		for i := range leases.Items {
			l, err := h.c.leases.Leases(LeaseNamespace).Get(leases.Items[i].Name)
			if err != nil || !l.Spec.RenewTime.Equal(leases.Items[i].Spec.RenewTime) {
				same = false
			}
		}
		pods, _ := h.client.CoreV1().Pods("").List(h.ctx, metav1.ListOptions{})
		if len(pods.Items) != len(h.c.pods.List()) {
			same = false
		}
		if same {
			return
		}
		if h.ctx.Err() != nil {
			h.t.Fatal("caches did not settle")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) pass() {
	h.settle()
	h.c.monitor(h.ctx)
	h.settle()
	h.c.taintPass(h.ctx)
	h.settle()
	h.c.evictPass(h.ctx)
	h.settle()
}

func (h *harness) node(name string) *corev1.Node {
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// podAlive reports whether pod name in "default" exists and is not being
// deleted.
func (h *harness) podAlive(name string) bool {
	p, err := h.client.CoreV1().Pods("default").Get(h.ctx, name, metav1.GetOptions{})
	return err == nil && p.DeletionTimestamp == nil
}

func (h *harness) nodeWrites() int {
	n := 0
	for _, a := range h.client.Actions() {
		if a.GetResource().Resource == "nodes" && (a.GetVerb() == "update" || a.GetVerb() == "patch") {
			n++
		}
	}
	return n
}

func taintKeys(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, t := range n.Spec.Taints {
		out[t.Key+":"+string(t.Effect)] = true
	}
	return out
}

func TestLeaseKeepsNodeAliveWithoutWrites(t *testing.T) {
	h := newHarness(t, Options{}, node("n1", "z", corev1.ConditionTrue), lease("n1", t0))
	for i := 1; i <= 10; i++ {
		h.clock.Step(30 * time.Second)
		l := lease("n1", h.clock.Now())
		if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Update(h.ctx, l, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for {
			got, _ := h.c.leases.Leases(LeaseNamespace).Get("n1")
			if got != nil && got.Spec.RenewTime.Equal(l.Spec.RenewTime) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		h.pass()
	}
	if w := h.nodeWrites(); w != 0 {
		t.Fatalf("%d node writes for a healthy node", w)
	}
}

func TestStaleLeaseMarksUnknownAndTaints(t *testing.T) {
	h := newHarness(t, Options{}, node("n1", "z", corev1.ConditionTrue), lease("n1", t0),
		node("n2", "z", corev1.ConditionTrue), lease("n2", t0), node("n3", "z", corev1.ConditionTrue), lease("n3", t0))
	h.pass()
	h.clock.Step(39 * time.Second)
	h.pass()
	if _, c := readyCondition(h.node("n1")); c.Status != corev1.ConditionTrue {
		t.Fatal("marked before the grace period")
	}
	// n2 and n3 keep renewing; n1 does not.
	for _, name := range []string{"n2", "n3"} {
		if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Update(h.ctx, lease(name, h.clock.Now()), metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Step(2 * time.Second)
	h.pass()
	n := h.node("n1")
	for _, c := range n.Status.Conditions {
		if c.Status != corev1.ConditionUnknown || (c.Type == corev1.NodeReady && (c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status.")) {
			t.Fatalf("condition %s = %s/%s", c.Type, c.Status, c.Reason)
		}
	}
	if len(n.Status.Conditions) != 4 {
		t.Fatalf("want Ready and the three pressure conditions, got %d", len(n.Status.Conditions))
	}
	keys := taintKeys(n)
	if !keys["node.kubernetes.io/unreachable:NoSchedule"] || !keys["node.kubernetes.io/unreachable:NoExecute"] {
		t.Fatalf("taints %v", keys)
	}
	for _, tt := range n.Spec.Taints {
		if tt.Effect == corev1.TaintEffectNoExecute && tt.TimeAdded == nil {
			t.Fatal("NoExecute taint without timeAdded")
		}
	}
	for _, name := range []string{"n2", "n3"} {
		if len(h.node(name).Spec.Taints) != 0 {
			t.Fatalf("healthy %s tainted", name)
		}
	}
	// The node comes back: taints go at once.
	if _, err := h.client.CoordinationV1().Leases(LeaseNamespace).Update(h.ctx, lease("n1", h.clock.Now()), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.NewTime(h.clock.Now())}}
	if _, err := h.client.CoreV1().Nodes().UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(time.Second)
	h.pass()
	if len(h.node("n1").Spec.Taints) != 0 {
		t.Fatalf("taints stayed on a recovered node: %v", taintKeys(h.node("n1")))
	}
}

func TestNotReadyTaint(t *testing.T) {
	h := newHarness(t, Options{}, node("n1", "z", corev1.ConditionFalse), lease("n1", t0), node("n2", "z", corev1.ConditionTrue), lease("n2", t0))
	h.pass()
	keys := taintKeys(h.node("n1"))
	if !keys["node.kubernetes.io/not-ready:NoSchedule"] || !keys["node.kubernetes.io/not-ready:NoExecute"] {
		t.Fatalf("taints %v", keys)
	}
}

// TestZoneRates: the number of nodes given a NoExecute taint after the
// clock runs on, per zone situation.
func TestZoneRates(t *testing.T) {
	tests := []struct {
		name            string
		healthy, failed int
		zones           int // nodes spread over this many zones (failed ones in the first)
		after           time.Duration
		opts            Options
		wantNoExecute   int
	}{
		{"healthy zone: one at once, then 0.1/s", 7, 3, 1, 0, Options{}, 1},
		{"healthy zone after 10s", 7, 3, 1, 10 * time.Second, Options{}, 2},
		{"partial disruption in a small zone stops", 2, 3, 1, 100 * time.Second, Options{}, 0},
		{"partial disruption in a large zone: secondary rate", 2, 3, 1, 100 * time.Second, Options{LargeClusterSizeThreshold: 4}, 2},
		{"one zone fully down, another up: normal rate", 2, 3, 2, 0, Options{}, 1},
		{"every zone fully down: nothing", 0, 3, 1, 100 * time.Second, Options{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			for i := range tc.failed {
				objs = append(objs, node(fmt.Sprintf("bad%d", i), "z0", corev1.ConditionFalse), lease(fmt.Sprintf("bad%d", i), t0))
			}
			for i := range tc.healthy {
				z := fmt.Sprintf("z%d", i%tc.zones)
				if tc.zones > 1 {
					z = "z1"
				}
				objs = append(objs, node(fmt.Sprintf("ok%d", i), z, corev1.ConditionTrue), lease(fmt.Sprintf("ok%d", i), t0))
			}
			h := newHarness(t, tc.opts, objs...)
			h.pass()
			for step := time.Duration(0); step < tc.after; step += time.Second {
				h.clock.Step(time.Second)
				// Keep every lease fresh: the failed nodes report Ready=False.
				h.c.mu.Lock()
				for _, hl := range h.c.mu.health {
					hl.probeTime = h.clock.Now()
				}
				h.c.mu.Unlock()
				h.pass()
			}
			got := 0
			for i := range tc.failed {
				if taintKeys(h.node(fmt.Sprintf("bad%d", i)))["node.kubernetes.io/not-ready:NoExecute"] {
					got++
				}
			}
			if got != tc.wantNoExecute {
				t.Fatalf("%d nodes tainted NoExecute, want %d", got, tc.wantNoExecute)
			}
		})
	}
}

func TestEviction(t *testing.T) {
	h := newHarness(t, Options{}, node("n1", "z", corev1.ConditionFalse), lease("n1", t0),
		node("n2", "z", corev1.ConditionTrue), lease("n2", t0),
		pod("intolerant", "n1", nil), pod("tolerates-300", "n1", ptr(int64(300))), pod("elsewhere", "n2", nil))
	h.pass()
	if h.podAlive("intolerant") || !h.podAlive("tolerates-300") || !h.podAlive("elsewhere") {
		t.Fatalf("after tainting: intolerant %v, tolerant %v, elsewhere %v", h.podAlive("intolerant"), h.podAlive("tolerates-300"), h.podAlive("elsewhere"))
	}
	h.clock.Step(299 * time.Second)
	h.c.evictPass(h.ctx)
	if !h.podAlive("tolerates-300") {
		t.Fatal("evicted before its toleration ran out")
	}
	h.clock.Step(2 * time.Second)
	h.c.evictPass(h.ctx)
	if h.podAlive("tolerates-300") || !h.podAlive("elsewhere") {
		t.Fatal("toleration expiry did not evict, or evicted a pod on a healthy node")
	}
}

func TestEvictionTime(t *testing.T) {
	added := metav1.NewTime(t0)
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	custom := corev1.Taint{Key: "example.com/x", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	tests := []struct {
		name   string
		pod    *corev1.Pod
		taints []corev1.Taint
		want   time.Time
		ok     bool
	}{
		{"not tolerated: now", pod("a", "n", nil), []corev1.Taint{unreachable}, time.Time{}, true},
		{"300s", pod("a", "n", ptr(int64(300))), []corev1.Taint{unreachable}, t0.Add(300 * time.Second), true},
		{"forever", func() *corev1.Pod {
			p := pod("a", "n", nil)
			p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
			return p
		}(), []corev1.Taint{unreachable, custom}, time.Time{}, false},
		{"one of two taints not tolerated", pod("a", "n", ptr(int64(300))), []corev1.Taint{unreachable, custom}, time.Time{}, true},
		{"negative seconds mean now", pod("a", "n", ptr(int64(-5))), []corev1.Taint{unreachable}, t0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := evictionTime(tc.pod, tc.taints)
			if ok != tc.ok || !got.Equal(tc.want) {
				t.Fatalf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestUndatedTaintCountsFromFirstSight(t *testing.T) {
	n := node("n1", "z", corev1.ConditionTrue)
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/drain", Effect: corev1.TaintEffectNoExecute}}
	p := pod("p", "n1", nil)
	p.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(60))}}
	h := newHarness(t, Options{}, n, lease("n1", t0), p)
	h.settle()
	h.c.evictPass(h.ctx)
	if !h.podAlive("p") {
		t.Fatal("an undated taint evicted at once a pod tolerating it for 60s")
	}
	h.clock.Step(59 * time.Second)
	h.c.evictPass(h.ctx)
	if !h.podAlive("p") {
		t.Fatal("evicted before 60s")
	}
	h.clock.Step(2 * time.Second)
	h.c.evictPass(h.ctx)
	if h.podAlive("p") {
		t.Fatal("not evicted after 60s")
	}
}

// A taint's timeAdded is stored in whole seconds: a taint added at 0.9 s
// past a second reads as added 0.9 s earlier than it was. Its toleration
// counts from when the controller first saw it, as upstream's, so a pod is
// never evicted before its tolerationSeconds have passed.
func TestTolerationCountsFromFirstSightNotTruncatedTimeAdded(t *testing.T) {
	n := node("n1", "z", corev1.ConditionTrue)
	truncated := metav1.NewTime(t0.Add(-900 * time.Millisecond))
	n.Spec.Taints = []corev1.Taint{{Key: "example.com/drain", Effect: corev1.TaintEffectNoExecute, TimeAdded: &truncated}}
	p := pod("p", "n1", nil)
	p.Spec.Tolerations = []corev1.Toleration{{Key: "example.com/drain", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(1))}}
	h := newHarness(t, Options{}, n, lease("n1", t0), p)
	h.settle()
	h.c.evictPass(h.ctx) // first sight, at t0
	h.clock.Step(500 * time.Millisecond)
	h.c.evictPass(h.ctx)
	if !h.podAlive("p") {
		t.Fatal("evicted 0.5 s after the taint was first seen, before its 1 s toleration")
	}
	h.clock.Step(600 * time.Millisecond)
	h.c.evictPass(h.ctx)
	if h.podAlive("p") {
		t.Fatal("not evicted 1.1 s after the taint was first seen")
	}
}

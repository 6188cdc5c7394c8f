package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/scheduler"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// ctlNodeFailureReplacement is node failure → taint → eviction →
// replacement pods elsewhere, with every part real: hollow nodes that
// heartbeat through Leases and run their pods, `myriad controllers` with
// node lifecycle and the workload controllers, and the scheduler. It has
// its own API server: the workload controllers and the scheduler would act
// on the other cases' objects, and their nodes would be candidates here.
//
// Timing is shortened throughout so the chain takes seconds: a 2 s grace
// period (node monitor every 0.5 s), Leases renewed every 0.5 s, and a 1 s
// toleration of the unreachable taint on the pod template in place of the
// 300 s that admission adds upstream.
func ctlNodeFailureReplacement(t *testing.T) {
	const (
		grace      = 2 * time.Second
		toleration = 1 // seconds
		replicas   = 6
		ns         = "default"
	)
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	c := s.client(t)
	ctx := context.Background()
	startControllerManager(t, s, "--controllers=nodelifecycle,replicaset,deployment", "--node-monitor-grace-period="+grace.String())
	startScheduler(t, s, scheduler.Config{})
	// One zone: with three nodes in three zones the dead node's zone would
	// be fully disrupted, which is not what this case is about.
	hs := startSim(t, sim.Config{
		RESTConfig:       s.restConfig(t),
		Nodes:            3,
		NamePrefix:       "nf-node-",
		Zones:            []string{"nf-zone"},
		RenewInterval:    500 * time.Millisecond,
		LeaseDuration:    grace,
		PodStartupDelay:  100 * time.Millisecond,
		TerminationDelay: 100 * time.Millisecond,
	})
	t.Cleanup(hs.Stop)

	d := workloadDeployment("web", replicas, "nginx:1")
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptrTo(int64(toleration)),
		})
	}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := func() []corev1.Pod {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	// running is the live (not terminating) pods Running on a node.
	running := func(ps []corev1.Pod) []corev1.Pod {
		return slices.DeleteFunc(ps, func(p corev1.Pod) bool {
			return p.DeletionTimestamp != nil || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning
		})
	}
	available := func() bool {
		got, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation && got.Status.AvailableReplicas == replicas && got.Status.UpdatedReplicas == replicas
	}
	waitFor(t, 30*time.Second, func() bool { return len(running(pods())) == replicas && available() })

	// Fail the node running the most replicas.
	before := running(pods())
	perNode := map[string][]types.UID{}
	for _, p := range before {
		perNode[p.Spec.NodeName] = append(perNode[p.Spec.NodeName], p.UID)
	}
	dead := ""
	for node, uids := range perNode {
		if dead == "" || len(uids) > len(perNode[dead]) || len(uids) == len(perNode[dead]) && node < dead {
			dead = node
		}
	}
	t.Logf("replicas per node before the failure: %v", func() map[string]int {
		m := map[string]int{}
		for n, u := range perNode {
			m[n] = len(u)
		}
		return m
	}())
	if err := hs.Fail(dead); err != nil {
		t.Fatal(err)
	}
	start := time.Now()

	var tainted time.Duration
	waitFor(t, 20*time.Second, func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, dead, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
			return tt.Key == corev1.TaintNodeUnreachable && tt.Effect == corev1.TaintEffectNoExecute
		}) {
			return false
		}
		tainted = time.Since(start)
		return true
	})
	// The last renewal was at most one RenewInterval before the failure.
	if tainted < grace-500*time.Millisecond {
		t.Errorf("node tainted %v after it failed, before the %v grace period", tainted.Round(time.Millisecond), grace)
	}
	// Every replica on the dead node is evicted (terminating: its kubelet
	// is gone, so nothing confirms the deletion), none elsewhere.
	isDead := func(p corev1.Pod) bool { return p.Spec.NodeName == dead }
	var evicted time.Duration
	waitFor(t, 20*time.Second, func() bool {
		ps := pods()
		for _, uid := range perNode[dead] {
			i := slices.IndexFunc(ps, func(p corev1.Pod) bool { return p.UID == uid })
			if i >= 0 && ps[i].DeletionTimestamp == nil {
				return false
			}
		}
		evicted = time.Since(start)
		return true
	})
	if evicted-tainted < time.Duration(toleration)*time.Second-100*time.Millisecond {
		t.Errorf("pods evicted %v after the taint, before their %ds toleration", (evicted - tainted).Round(time.Millisecond), toleration)
	}
	// The ReplicaSet replaces them; the scheduler places the replacements
	// on the healthy nodes (the dead one has the unreachable NoSchedule
	// taint) and the hollow nodes run them.
	var replaced time.Duration
	waitFor(t, 30*time.Second, func() bool {
		live := running(pods())
		if len(live) != replicas || slices.ContainsFunc(live, isDead) || !available() {
			return false
		}
		replaced = time.Since(start)
		return true
	})
	after := running(pods())
	fresh := 0
	for _, p := range after {
		if !slices.ContainsFunc(before, func(q corev1.Pod) bool { return q.UID == p.UID }) {
			fresh++
		}
	}
	if fresh != len(perNode[dead]) {
		t.Errorf("%d replacement pods, want %d (one per evicted pod; healthy nodes' pods must stay)", fresh, len(perNode[dead]))
	}
	for node, uids := range perNode {
		if node == dead {
			continue
		}
		for _, uid := range uids {
			if !slices.ContainsFunc(after, func(p corev1.Pod) bool { return p.UID == uid }) {
				t.Errorf("pod %s on healthy node %s was evicted", uid, node)
			}
		}
	}
	placed := map[string]int{}
	for _, p := range after {
		placed[p.Spec.NodeName]++
	}
	t.Logf("node %s failed: unreachable NoExecute taint after %v, its %d replicas evicted after %v, %d replacements running on %v and the Deployment available after %v",
		dead, tainted.Round(time.Millisecond), len(perNode[dead]), evicted.Round(time.Millisecond), fresh, fmt.Sprint(placed), replaced.Round(time.Millisecond))
}

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/sim"
)

// simConfig is 50 hollow nodes with short periods so a test sees several
// renewals in seconds.
func simConfig(t *testing.T, s *server) sim.Config {
	return sim.Config{
		RESTConfig:       s.restConfig(t),
		Nodes:            50,
		RenewInterval:    time.Second,
		LeaseDuration:    10 * time.Second,
		PodStartupDelay:  200 * time.Millisecond,
		TerminationDelay: 200 * time.Millisecond,
	}
}

// startWithHollowNodes starts a `myriad up` of the test's own (its data in
// a temporary dir named name) and nodes hollow nodes against it, with
// configure (if set) adjusting the simulator's Config; both stop when the
// test ends, the nodes first.
func startWithHollowNodes(t *testing.T, name string, nodes int, configure func(*sim.Config)) (*server, *sim.Sim) {
	t.Helper()
	srv, err := startServer(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Error(err)
		}
	})
	cfg := simConfig(t, srv)
	cfg.Nodes = nodes
	if configure != nil {
		configure(&cfg)
	}
	hs := startSim(t, cfg)
	t.Cleanup(hs.Stop)
	return srv, hs
}

func startSim(t *testing.T, cfg sim.Config) *sim.Sim {
	t.Helper()
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func simPod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		},
	}
}

func leaseRenewTime(t *testing.T, c kubernetes.Interface, name string) time.Time {
	t.Helper()
	l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Spec.RenewTime.Time
}

func TestSimHollowNodes(t *testing.T) {
	srv, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.stop(); err != nil {
			t.Error(err)
		}
	}()
	c := srv.protoClient(t)
	ctx := context.Background()
	hs := startSim(t, simConfig(t, srv))
	defer hs.Stop()

	t.Run("nodes and leases registered", func(t *testing.T) {
		nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sim.LabelHollowNode + "=true"})
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 50 {
			t.Fatalf("%d hollow nodes, want 50", len(nodes.Items))
		}
		uids := map[string]string{}
		for _, n := range nodes.Items {
			uids[n.Name] = string(n.UID)
			ready := false
			for _, cond := range n.Status.Conditions {
				ready = ready || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
			}
			if !ready || n.Labels[corev1.LabelHostname] != n.Name || n.Status.Allocatable.Cpu().String() != "32" {
				t.Errorf("node %s: ready %v, labels %v, allocatable %v", n.Name, ready, n.Labels, n.Status.Allocatable)
			}
		}
		leases, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, l := range leases.Items {
			uid, ok := uids[l.Name]
			if !ok {
				continue
			}
			found++
			if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != l.Name || *l.Spec.LeaseDurationSeconds != 10 ||
				len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || string(l.OwnerReferences[0].UID) != uid {
				t.Errorf("lease %s: spec %+v owners %+v", l.Name, l.Spec, l.OwnerReferences)
			}
		}
		if found != 50 {
			t.Errorf("%d leases of hollow nodes, want 50", found)
		}
	})

	t.Run("leases are renewed", func(t *testing.T) {
		before := leaseRenewTime(t, c, "hollow-node-7")
		waitFor(t, 5*time.Second, func() bool { return leaseRenewTime(t, c, "hollow-node-7").After(before) })
	})

	t.Run("pods run with IPs", func(t *testing.T) {
		for i := range 20 {
			if _, err := c.CoreV1().Pods("default").Create(ctx, simPod(fmt.Sprintf("run-%d", i), fmt.Sprintf("hollow-node-%d", i%10), "1"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, 15*time.Second, func() bool {
			pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ips := map[string]bool{}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && p.Status.HostIP != "" {
					ips[p.Status.PodIP] = true
				}
			}
			return len(ips) == 20
		})
		p, err := c.CoreV1().Pods("default").Get(ctx, "run-3", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cs := p.Status.ContainerStatuses
		if len(cs) != 1 || !cs[0].Ready || cs[0].State.Running == nil || p.Status.StartTime == nil {
			t.Errorf("run-3 status %+v", p.Status)
		}
	})

	t.Run("graceful delete completes", func(t *testing.T) {
		if err := c.CoreV1().Pods("default").Delete(ctx, "run-0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			_, err := c.CoreV1().Pods("default").Get(ctx, "run-0", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
	})

	t.Run("pod that does not fit is rejected", func(t *testing.T) {
		if _, err := c.CoreV1().Pods("default").Create(ctx, simPod("too-big", "hollow-node-1", "31.5"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var p *corev1.Pod
		waitFor(t, 10*time.Second, func() bool {
			p, err = c.CoreV1().Pods("default").Get(ctx, "too-big", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodFailed
		})
		// hollow-node-1 runs run-1 and run-11, 1 CPU each.
		want := "Pod was rejected: Node didn't have enough resource: cpu, requested: 31500, used: 2000, capacity: 32000"
		if p.Status.Reason != "OutOfcpu" || p.Status.Message != want {
			t.Errorf("reason %q message %q, want OutOfcpu %q", p.Status.Reason, p.Status.Message, want)
		}
	})

	t.Run("annotated pod runs to Succeeded", func(t *testing.T) {
		p := simPod("batch", "hollow-node-20", "1")
		p.Annotations = map[string]string{sim.AnnotationRunSeconds: "0.5"}
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		if _, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			p, err := c.CoreV1().Pods("default").Get(ctx, "batch", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodSucceeded
		})
	})

	t.Run("failed node stops renewing and recovers", func(t *testing.T) {
		if err := hs.Fail("hollow-node-3"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // a renewal in flight lands
		stopped := leaseRenewTime(t, c, "hollow-node-3")
		other := leaseRenewTime(t, c, "hollow-node-4")
		time.Sleep(3 * time.Second)
		if got := leaseRenewTime(t, c, "hollow-node-3"); !got.Equal(stopped) {
			t.Errorf("failed node's lease renewed: %v -> %v", stopped, got)
		}
		if got := leaseRenewTime(t, c, "hollow-node-4"); !got.After(other) {
			t.Errorf("healthy node's lease not renewed in 3s: %v -> %v", other, got)
		}
		if err := hs.Recover("hollow-node-3"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, func() bool { return leaseRenewTime(t, c, "hollow-node-3").After(stopped) })
	})

	st := hs.Stats()
	if st.RenewalErrors != 0 || st.Renewals == 0 || st.MaxRenewGap >= 10*time.Second || st.PodsRunning != 19 || st.PodsRejected != 1 || st.PodsSucceeded != 1 || st.PodsDeleted != 1 {
		t.Errorf("stats: %+v", st)
	}

	// The second run uses one shared pod watch instead of one per node.
	t.Run("restarted simulator adopts nodes and pods", func(t *testing.T) {
		node, err := c.CoreV1().Nodes().Get(ctx, "hollow-node-5", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hs.Stop()
		cfg := simConfig(t, srv)
		cfg.PodWatch = sim.PodWatchShared
		hs2 := startSim(t, cfg)
		defer hs2.Stop()
		again, err := c.CoreV1().Nodes().Get(ctx, "hollow-node-5", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if again.UID != node.UID {
			t.Errorf("node recreated (uid %s -> %s), want reused", node.UID, again.UID)
		}
		waitFor(t, 10*time.Second, func() bool { return hs2.Stats().PodsRunning == 19 })
		// A new pod on a node with adopted pods gets a fresh address.
		if _, err := c.CoreV1().Pods("default").Create(ctx, simPod("after-restart", "hollow-node-1", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, func() bool {
			p, err := c.CoreV1().Pods("default").Get(ctx, "after-restart", metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning
		})
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=hollow-node-1"})
		if err != nil {
			t.Fatal(err)
		}
		ips := map[string]string{}
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			if other, dup := ips[p.Status.PodIP]; dup {
				t.Errorf("%s and %s share IP %s", p.Name, other, p.Status.PodIP)
			}
			ips[p.Status.PodIP] = p.Name
		}
	})
}

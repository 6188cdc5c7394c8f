package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/scheduler"
)

// startScheduler runs scheduler.Run in-process against s until the test
// ends; it returns a stop function that cancels and waits.
func startScheduler(t *testing.T, s *server, cfg scheduler.Config) (stop func() error) {
	t.Helper()
	cfg.RESTConfig = s.restConfig(t)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- scheduler.Run(ctx, cfg) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = fmt.Errorf("scheduler did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("scheduler: %v", err)
		}
	})
	return stop
}

func startSchedulerAPI(t *testing.T) (*server, kubernetes.Interface) {
	t.Helper()
	s, err := startAPIServer(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping apiserver: %v", err)
		}
	})
	return s, s.client(t)
}

func schedNode(name, cpu string, labels map[string]string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
}

func createNode(t *testing.T, c kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", n.Name, err)
	}
	if created.Status.Allocatable.Cpu().IsZero() {
		created.Status = n.Status
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("node %s status: %v", n.Name, err)
		}
	}
}

func schedPod(name, cpu string) *corev1.Pod {
	zero := int64(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "sched"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
		},
	}
}

func listPods(t *testing.T, c kubernetes.Interface, ns string) []corev1.Pod {
	t.Helper()
	l, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitBound waits until exactly n of the namespace's pods are bound.
func waitBound(t *testing.T, c kubernetes.Interface, ns string, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, func() bool {
		bound := 0
		for _, p := range listPods(t, c, ns) {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == n
	})
}

func podScheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestSchedulerPlacement: many pods created at once land only on nodes
// that fit them, no node is over-committed, the ones that fit nowhere get
// the condition and the event, and are placed once a node with room
// arrives.
func TestSchedulerPlacement(t *testing.T) {
	s, c := startSchedulerAPI(t)
	ctx := context.Background()
	const ns = "sched-place"
	mkNamespace(t, c, ns)
	for i := 0; i < 5; i++ {
		labels := map[string]string{"disk": "hdd"}
		if i == 0 {
			labels["disk"] = "ssd"
		}
		createNode(t, c, schedNode(fmt.Sprintf("node-%d", i), "4", labels))
	}
	tainted := schedNode("tainted", "64", nil)
	tainted.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
	createNode(t, c, tainted)
	reg := prometheus.NewRegistry()
	startScheduler(t, s, scheduler.Config{Metrics: reg})

	// 5 x 4 cpu = 20 cpu for 24 one-cpu pods; two pinned to ssd go first.
	for i := 0; i < 2; i++ {
		p := schedPod(fmt.Sprintf("ssd-%d", i), "1")
		p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, func() bool {
		for _, p := range listPods(t, c, ns) {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	var wg sync.WaitGroup
	errs := make(chan error, 22)
	for i := 0; i < 22; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := schedPod(fmt.Sprintf("p-%02d", i), "1")
			if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var pending []corev1.Pod
	waitFor(t, 30*time.Second, func() bool {
		bound := 0
		pending = pending[:0]
		for _, p := range listPods(t, c, ns) {
			if p.Spec.NodeName != "" {
				bound++
			} else if cond := podScheduledCondition(&p); cond != nil && cond.Reason == corev1.PodReasonUnschedulable {
				pending = append(pending, p)
			}
		}
		return bound == 20 && len(pending) == 4
	})
	perNode := map[string]int{}
	for _, p := range listPods(t, c, ns) {
		if p.Spec.NodeName == "" {
			continue
		}
		perNode[p.Spec.NodeName]++
		if p.Spec.NodeName == "tainted" {
			t.Errorf("%s landed on the tainted node", p.Name)
		}
		if p.Spec.NodeSelector != nil && p.Spec.NodeName != "node-0" {
			t.Errorf("%s (disk=ssd) landed on %s", p.Name, p.Spec.NodeName)
		}
	}
	for n, count := range perNode {
		if count > 4 {
			t.Errorf("node %s over-committed: %d one-cpu pods on 4 cpu", n, count)
		}
	}
	cond := podScheduledCondition(&pending[0])
	wantPrefix := "0/6 nodes are available: 1 node(s) had untolerated taint {dedicated: infra}, 5 Insufficient cpu."
	if cond.Status != corev1.ConditionFalse || !strings.HasPrefix(cond.Message, wantPrefix) {
		t.Fatalf("condition %+v, want message starting %q", cond, wantPrefix)
	}
	waitFor(t, 10*time.Second, func() bool {
		// The scheduler writes events.k8s.io/v1 Events, as kube-scheduler.
		evs, err := c.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		failed, scheduled := false, false
		for _, e := range evs.Items {
			failed = failed || (e.Reason == "FailedScheduling" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == pending[0].Name && strings.HasPrefix(e.Note, wantPrefix))
			scheduled = scheduled || (e.Reason == "Scheduled" && strings.HasPrefix(e.Note, "Successfully assigned "+ns+"/"))
		}
		return failed && scheduled
	})

	// Metrics, with upstream's names: every bound pod counted once.
	names := map[string]bool{}
	attempts := map[string]float64{}
	waitFor(t, 10*time.Second, func() bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		clear(attempts)
		for _, mf := range mfs {
			names[mf.GetName()] = true
			if mf.GetName() != "scheduler_schedule_attempts_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" {
						attempts[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		}
		return attempts["scheduled"] == 20 && attempts["unschedulable"] >= 4
	})
	for _, n := range []string{"scheduler_schedule_attempts_total", "scheduler_scheduling_attempt_duration_seconds", "scheduler_pending_pods", "scheduler_e2e_scheduling_duration_seconds"} {
		if !names[n] {
			t.Errorf("metric %s missing", n)
		}
	}

	// A node with room: the waiting pods are retried (not a hot loop: they
	// waited in the unschedulable queue) and placed on it.
	createNode(t, c, schedNode("roomy", "8", map[string]string{"disk": "hdd"}))
	waitFor(t, 30*time.Second, func() bool {
		for _, p := range listPods(t, c, ns) {
			if p.Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	for _, p := range pending {
		got, err := c.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != "roomy" {
			t.Errorf("%s placed on %s, want roomy", p.Name, got.Spec.NodeName)
		}
	}
}

// TestSchedulerFreedCapacity: in a full cluster a pod that fits nowhere
// gets the condition and the event, and is placed on the node that a
// deleted pod frees. No node is added and nothing else changes, and a pod
// waits up to five minutes in the unschedulable queue before a periodic
// retry, so placing it within seconds shows the queue moved it on the pod
// deletion itself.
func TestSchedulerFreedCapacity(t *testing.T) {
	s, c := startSchedulerAPI(t)
	ctx := context.Background()
	const ns = "sched-freed"
	mkNamespace(t, c, ns)
	createNode(t, c, schedNode("full-a", "2", nil))
	createNode(t, c, schedNode("full-b", "2", nil))
	startScheduler(t, s, scheduler.Config{})

	// Four one-cpu pods fill both two-cpu nodes.
	for i := 0; i < 4; i++ {
		if _, err := c.CoreV1().Pods(ns).Create(ctx, schedPod(fmt.Sprintf("fill-%d", i), "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, c, ns, 4)

	if _, err := c.CoreV1().Pods(ns).Create(ctx, schedPod("waiting", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "0/2 nodes are available: 2 Insufficient cpu."
	var cond *corev1.PodCondition
	waitFor(t, 30*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "waiting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("waiting placed on the full node %s", p.Spec.NodeName)
		}
		cond = podScheduledCondition(p)
		return cond != nil && cond.Reason == corev1.PodReasonUnschedulable
	})
	if cond.Status != corev1.ConditionFalse || !strings.HasPrefix(cond.Message, want) {
		t.Fatalf("condition %+v, want False with a message starting %q", cond, want)
	}
	waitFor(t, 10*time.Second, func() bool {
		evs, err := c.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedScheduling" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "waiting" && strings.HasPrefix(e.Note, want) {
				return true
			}
		}
		return false
	})

	victim, err := c.CoreV1().Pods(ns).Get(ctx, "fill-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := c.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Backoff after one failed attempt is a second or two; 15s leaves room
	// on a loaded machine and stays far below the five-minute retry.
	waitFor(t, 15*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "waiting", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != victim.Spec.NodeName {
			t.Fatalf("waiting placed on %s, but only %s has room", p.Spec.NodeName, victim.Spec.NodeName)
		}
		return p.Spec.NodeName == victim.Spec.NodeName
	})
	t.Logf("placed %v after the deletion", time.Since(start))
	perNode := map[string]int{}
	for _, p := range listPods(t, c, ns) {
		perNode[p.Spec.NodeName]++
	}
	if perNode["full-a"] != 2 || perNode["full-b"] != 2 {
		t.Fatalf("pods per node %v, want 2 on each", perNode)
	}
}

// TestSchedulerPreemption: a high-priority pod that fits nowhere evicts the
// fewest lowest-priority pods, and never pods of higher priority.
func TestSchedulerPreemption(t *testing.T) {
	s, c := startSchedulerAPI(t)
	ctx := context.Background()
	const ns = "sched-preempt"
	mkNamespace(t, c, ns)
	for name, value := range map[string]int32{"low": 10, "high": 1000, "top": 100000} {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
		if _, err := c.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNode(t, c, schedNode("a", "2", nil))
	createNode(t, c, schedNode("b", "2", nil))
	startScheduler(t, s, scheduler.Config{})

	// Fill node a with low pods and node b with top pods.
	for i, spec := range []struct{ name, class, node string }{
		{"low-1", "low", "a"}, {"low-2", "low", "a"}, {"top-1", "top", "b"}, {"top-2", "top", "b"},
	} {
		p := schedPod(spec.name, "1")
		p.Spec.PriorityClassName = spec.class
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: spec.node}
		_ = i
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Nodes have no hostname label until we add it; add it now so the
	// selectors above resolve.
	for _, n := range []string{"a", "b"} {
		node, err := c.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Labels = map[string]string{corev1.LabelHostname: n}
		if _, err := c.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitBound(t, c, ns, 4)

	high := schedPod("high", "1")
	high.Spec.PriorityClassName = "high"
	created, err := c.CoreV1().Pods(ns).Create(ctx, high, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.Priority == nil || *created.Spec.Priority != 1000 {
		t.Fatalf("API did not resolve priorityClassName: %v", created.Spec.Priority)
	}
	waitFor(t, 30*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "high", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "a"
	})
	var gone []string
	for _, name := range []string{"low-1", "low-2", "top-1", "top-2"} {
		if _, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			gone = append(gone, name)
		}
	}
	if len(gone) != 1 || !strings.HasPrefix(gone[0], "low-") {
		t.Fatalf("evicted %v, want exactly one low pod", gone)
	}
}

// TestSchedulerLeaderElection: two schedulers share the Lease; the standby
// takes over as soon as the leader releases it on shutdown.
func TestSchedulerLeaderElection(t *testing.T) {
	s, c := startSchedulerAPI(t)
	ctx := context.Background()
	const ns = "sched-le"
	mkNamespace(t, c, ns)
	createNode(t, c, schedNode("n", "100", nil))
	le := func(id string) scheduler.Config {
		return scheduler.Config{LeaderElect: true, Identity: id, LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 200 * time.Millisecond}
	}
	holder := func() string {
		l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	stopFirst := startScheduler(t, s, le("first"))
	waitFor(t, 10*time.Second, func() bool { return holder() == "first" })
	startScheduler(t, s, le("second"))

	if _, err := c.CoreV1().Pods(ns).Create(ctx, schedPod("p1", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "p1", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "n"
	})
	if h := holder(); h != "first" {
		t.Fatalf("holder %q while first runs", h)
	}
	start := time.Now()
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	// Released on shutdown: the standby acquires it well before the 30s
	// lease would expire.
	waitFor(t, 10*time.Second, func() bool { return holder() == "second" })
	t.Logf("takeover after %v", time.Since(start))
	if _, err := c.CoreV1().Pods(ns).Create(ctx, schedPod("p2", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "p2", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "n"
	})
}

// TestSchedulerCommand runs `myriad scheduler` as its own process against
// the API server, as an operator would, and stops it with SIGTERM.
func TestSchedulerCommand(t *testing.T) {
	s, c := startSchedulerAPI(t)
	ctx := context.Background()
	const ns = "sched-cmd"
	mkNamespace(t, c, ns)
	createNode(t, c, schedNode("n", "4", nil))

	log := &safeBuffer{}
	cmd := exec.Command(binary, "scheduler", "--kubeconfig", s.kubeconfig, "--leader-elect-retry-period", "200ms")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
	}()

	if _, err := c.CoreV1().Pods(ns).Create(ctx, schedPod("p", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName == "n"
	})
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("myriad scheduler exited with %v:\n%s", err, log.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("myriad scheduler did not stop on SIGTERM:\n%s", log.String())
	}
	// It released the Lease on the way out.
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, "kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := l.Spec.HolderIdentity; h != nil && *h != "" {
		t.Fatalf("Lease still held by %q after shutdown", *h)
	}
}

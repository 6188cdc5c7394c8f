package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// myControllers are the controllers these tests exercise; the workload
// controllers are tested elsewhere and left out so they cannot interfere.
const myControllers = "--controllers=serviceaccount,root-ca-cert-publisher,namespace,garbagecollector,nodelifecycle,pod-garbage-collector,endpointslice,endpoint"

// ctlProc is one `myriad controllers` subprocess.
type ctlProc struct {
	cmd  *exec.Cmd
	log  *safeBuffer
	done chan error
}

func startControllerManager(t *testing.T, s *server, args ...string) *ctlProc {
	t.Helper()
	p := &ctlProc{log: &safeBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(binary, append([]string{"controllers", "--kubeconfig", s.kubeconfig}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("controller manager log:\n%s", p.log.String())
		}
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit.
func (p *ctlProc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("controller manager exited with %v\n%s", err, p.log.String())
		}
		p.done <- err
	case <-time.After(20 * time.Second):
		t.Errorf("controller manager did not stop within 20s")
	}
}

func (p *ctlProc) kill() {
	_ = p.cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

func TestControllers(t *testing.T) {
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	startControllerManager(t, s, myControllers, "--node-monitor-grace-period=3s", "--log-level=debug")
	c := s.client(t)

	t.Run("ServiceAccountAndRootCA", func(t *testing.T) {
		t.Parallel()
		ctlServiceAccountAndRootCA(t, s, c)
	})
	t.Run("NamespaceDeletion", func(t *testing.T) {
		t.Parallel()
		ctlNamespaceDeletion(t, s, c)
	})
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan} {
		t.Run("Cascade"+string(policy), func(t *testing.T) {
			t.Parallel()
			ctlCascade(t, c, policy)
		})
	}
	t.Run("EndpointsFollowReadiness", func(t *testing.T) {
		t.Parallel()
		ctlEndpoints(t, c)
	})
	t.Run("NodeLeaseExpiry", func(t *testing.T) {
		t.Parallel()
		ctlNodeLeaseExpiry(t, c)
	})
	t.Run("NodeFailureReplacement", func(t *testing.T) {
		t.Parallel()
		ctlNodeFailureReplacement(t)
	})
}

func ctlServiceAccountAndRootCA(t *testing.T, s *server, c kubernetes.Interface) {
	ctx := context.Background()
	mkNamespace(t, c, "ctl-sa")
	cfg, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var ca []byte
	for _, cl := range cfg.Clusters {
		ca = cl.CertificateAuthorityData
	}
	waitFor(t, 10*time.Second, func() bool {
		_, err := c.CoreV1().ServiceAccounts("ctl-sa").Get(ctx, "default", metav1.GetOptions{})
		cm, err2 := c.CoreV1().ConfigMaps("ctl-sa").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil && err2 == nil && bytes.Equal([]byte(cm.Data["ca.crt"]), ca)
	})
	if err := c.CoreV1().ServiceAccounts("ctl-sa").Delete(ctx, "default", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CoreV1().ConfigMaps("ctl-sa").Delete(ctx, "kube-root-ca.crt", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool {
		_, err := c.CoreV1().ServiceAccounts("ctl-sa").Get(ctx, "default", metav1.GetOptions{})
		_, err2 := c.CoreV1().ConfigMaps("ctl-sa").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil && err2 == nil
	})
}

func ctlNamespaceDeletion(t *testing.T, s *server, c kubernetes.Interface) {
	ctx := context.Background()
	mkNamespace(t, c, "ctl-ns")
	for i := range 5 {
		if _, err := c.CoreV1().ConfigMaps("ctl-ns").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CoreV1().Pods("ctl-ns").Create(ctx, testPod("p", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppsV1().Deployments("ctl-ns").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.mustKubectl(t, "", "delete", "namespace", "ctl-ns", "--timeout=30s")
	_, err := c.CoreV1().Namespaces().Get(ctx, "ctl-ns", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("namespace still there after kubectl delete returned: %v", err)
	}
	t.Logf("kubectl delete namespace with 8 objects took %v", time.Since(start).Round(time.Millisecond))
}

func ctlCascade(t *testing.T, c kubernetes.Interface, policy metav1.DeletionPropagation) {
	ctx := context.Background()
	ns := "ctl-gc-" + string(bytes.ToLower([]byte(policy)))
	mkNamespace(t, c, ns)
	// A chain owner -> child ReplicaSet -> ConfigMaps, so foreground has
	// something to wait on through two levels.
	rs := func(name string, owner *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		r := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptrTo(int32(0)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"rs": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"rs": name}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}},
			},
		}
		if owner != nil {
			r.OwnerReferences = []metav1.OwnerReference{ownerRef(owner)}
		}
		out, err := c.AppsV1().ReplicaSets(ns).Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	top := rs("top", nil)
	child := rs("child", top)
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("dep%d", i), OwnerReferences: []metav1.OwnerReference{ownerRef(child)}}}
		if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := c.AppsV1().ReplicaSets(ns).Delete(ctx, "top", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		t.Fatal(err)
	}
	cms := func() []corev1.ConfigMap {
		l, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(l.Items, func(cm corev1.ConfigMap) bool { return cm.Name == "kube-root-ca.crt" })
	}
	gone := func(name string) bool {
		_, err := c.AppsV1().ReplicaSets(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}
	switch policy {
	case metav1.DeletePropagationForeground:
		// The owner stays (with the foregroundDeletion finalizer) until the
		// whole chain below it is gone.
		for !gone("top") {
			// Read bottom-up: what was seen gone stays gone.
			n := len(cms())
			childGone := gone("child")
			if childGone && n > 0 {
				t.Fatal("child gone before its own dependents")
			}
			if time.Since(start) > 20*time.Second {
				t.Fatal("foreground deletion did not finish")
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !gone("child") || len(cms()) != 0 {
			t.Fatal("owner gone before its dependents")
		}
	case metav1.DeletePropagationBackground:
		waitFor(t, 20*time.Second, func() bool { return gone("top") && gone("child") && len(cms()) == 0 })
	case metav1.DeletePropagationOrphan:
		waitFor(t, 20*time.Second, func() bool { return gone("top") })
		r, err := c.AppsV1().ReplicaSets(ns).Get(ctx, "child", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("orphaned child deleted: %v", err)
		}
		if len(r.OwnerReferences) != 0 {
			t.Fatalf("orphaned child keeps owner references %v", r.OwnerReferences)
		}
		time.Sleep(500 * time.Millisecond)
		if len(cms()) != 3 {
			t.Fatal("grandchildren of an orphaning delete were deleted")
		}
	}
	t.Logf("%s cascade finished in %v", policy, time.Since(start).Round(time.Millisecond))
}

func ownerRef(r *appsv1.ReplicaSet) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: r.Name, UID: r.UID, BlockOwnerDeletion: ptrTo(true), Controller: ptrTo(true)}
}

func ptrTo[T any](v T) *T { return &v }

func ctlEndpoints(t *testing.T, c kubernetes.Interface) {
	ctx := context.Background()
	ns := "ctl-ep"
	mkNamespace(t, c, ns)
	if _, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromString("http")},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setPod := func(i int, ready bool) {
		t.Helper()
		name := fmt.Sprintf("web-%d", i)
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			p = &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
			}
			if p, err = c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if ready {
			st = corev1.ConditionTrue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = fmt.Sprintf("10.244.0.%d", i+10)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// state reads (ready, not ready) from both APIs and checks they agree.
	state := func() (int, int, bool) {
		slices, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		sr, snr := 0, 0
		for _, s := range slices.Items {
			if s.Labels[discoveryv1.LabelManagedBy] != "endpointslice-controller.k8s.io" {
				t.Fatalf("slice labels %v", s.Labels)
			}
			for _, p := range s.Ports {
				if *p.Port != 8080 || *p.Name != "http" {
					t.Fatalf("slice port %+v, want http 8080", p)
				}
			}
			for _, ep := range s.Endpoints {
				if *ep.Conditions.Ready {
					sr++
				} else {
					snr++
				}
			}
		}
		ep, err := c.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return -1, -1, false
		}
		er, enr := 0, 0
		for _, ss := range ep.Subsets {
			er += len(ss.Addresses)
			enr += len(ss.NotReadyAddresses)
		}
		return sr, snr, sr == er && snr == enr
	}
	want := func(ready, notReady int) {
		t.Helper()
		start := time.Now()
		waitFor(t, 10*time.Second, func() bool {
			r, nr, agree := state()
			return agree && r == ready && nr == notReady
		})
		t.Logf("endpoints at %d ready / %d not ready after %v", ready, notReady, time.Since(start).Round(time.Millisecond))
	}
	for i := range 3 {
		setPod(i, i != 2)
	}
	want(2, 1)
	setPod(2, true)
	want(3, 0)
	setPod(0, false)
	want(2, 1)
	if err := c.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Fatal(err)
	}
	want(1, 1)
}

func ctlNodeLeaseExpiry(t *testing.T, c kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "ctl-node"
	mkNamespace(t, c, ns)
	names := []string{"ctl-dead", "ctl-ok1", "ctl-ok2"}
	renew := func(name string) {
		now := metav1.NewMicroTime(time.Now())
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptrTo(name), LeaseDurationSeconds: ptrTo(int32(40)), RenewTime: &now},
			}, metav1.CreateOptions{})
		} else if err == nil {
			l.Spec.RenewTime = &now
			_, err = c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(ctx, l, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			t.Errorf("renewing %s: %v", name, err)
		}
	}
	for _, name := range names {
		n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		renew(name)
	}
	// The healthy nodes keep renewing; the dead one never does again.
	go func() {
		for ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			renew("ctl-ok1")
			renew("ctl-ok2")
		}
	}()
	pod := func(name, node string, tol *int64) {
		p := testPod(name, node)
		p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: tol}}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod("short", "ctl-dead", ptrTo(int64(1)))
	pod("forever", "ctl-dead", nil)
	pod("healthy", "ctl-ok1", ptrTo(int64(1)))
	start := time.Now()
	var tainted time.Duration
	waitFor(t, 20*time.Second, func() bool {
		n, err := c.CoreV1().Nodes().Get(ctx, "ctl-dead", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && (cond.Status != corev1.ConditionUnknown || cond.Reason != "NodeStatusUnknown") {
				return false
			}
		}
		has := func(effect corev1.TaintEffect) bool {
			return slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == corev1.TaintNodeUnreachable && tt.Effect == effect })
		}
		if has(corev1.TaintEffectNoExecute) && has(corev1.TaintEffectNoSchedule) {
			tainted = time.Since(start)
			return true
		}
		return false
	})
	if tainted < 3*time.Second {
		t.Fatalf("node tainted after %v, before the 3s grace period", tainted)
	}
	terminating := func(name string) bool {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil)
	}
	waitFor(t, 10*time.Second, func() bool { return terminating("short") })
	evicted := time.Since(start)
	t.Logf("dead node: Ready=Unknown and tainted after %v, 1s-toleration pod evicted after %v", tainted.Round(time.Millisecond), evicted.Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	if terminating("forever") || terminating("healthy") {
		t.Fatal("evicted a pod tolerating forever or on a healthy node")
	}
	for _, name := range []string{"ctl-ok1", "ctl-ok2"} {
		n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Spec.Taints) != 0 {
			t.Fatalf("healthy node %s tainted: %v", name, n.Spec.Taints)
		}
	}
}

// TestControllerBench measures what docs/bench/controllers.md reports. It
// is a benchmark, not a CI test: it runs only with
// MYRIAD_BENCH_CONTROLLERS=1 (MYRIAD_BENCH_PODS sets the cache-memory pod
// count, default 200000).
func TestControllerBench(t *testing.T) {
	if os.Getenv("MYRIAD_BENCH_CONTROLLERS") == "" {
		t.Skip("set MYRIAD_BENCH_CONTROLLERS=1 to run the controller benchmarks")
	}
	t.Run("EndpointSliceLatency5000", benchEndpointSliceLatency)
	t.Run("CacheMemory", benchCacheMemory)
}

// createPods creates n pods in ns from mk with parallel workers.
func createPods(t *testing.T, c kubernetes.Interface, ns string, n, workers int, mk func(i int) *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	next := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := mk(i)
				for attempt := 0; ; attempt++ {
					created, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
					if err == nil {
						if p.Status.PodIP != "" {
							created.Status = p.Status
							_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
						}
					}
					if err == nil || apierrors.IsAlreadyExists(err) {
						break
					}
					if attempt > 20 {
						failed.Add(1)
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	start := time.Now()
	for i := range n {
		next <- i
		if i > 0 && i%20000 == 0 {
			t.Logf("created %d pods (%.0f/s)", i, float64(i)/time.Since(start).Seconds())
		}
	}
	close(next)
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d pod creations failed", f)
	}
	t.Logf("created %d pods in %v", n, time.Since(start).Round(time.Millisecond))
}

func benchPod(i int, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%05d", i), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node-%d", i%100), Containers: []corev1.Container{{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

// benchEndpointSliceLatency: a Service with 5,000 ready endpoints; one pod
// at a time flips readiness; the latency is from the status write's
// response to the watch event of the slice that reflects it.
func benchEndpointSliceLatency(t *testing.T) {
	const n, rounds = 5000, 100
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	c := s.protoClient(t)
	ctx := context.Background()
	ns := "bench-ep"
	mkNamespace(t, c, ns)
	if _, err := c.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPods(t, c, ns, n, 16, func(i int) *corev1.Pod { return benchPod(i, true) })
	startControllerManager(t, s, "--controllers=endpointslice")
	ready := func() (int, int) {
		l, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r := 0
		for _, sl := range l.Items {
			for _, ep := range sl.Endpoints {
				if *ep.Conditions.Ready {
					r++
				}
			}
		}
		return r, len(l.Items)
	}
	start := time.Now()
	waitFor(t, 120*time.Second, func() bool { r, _ := ready(); return r == n })
	_, nslices := ready()
	t.Logf("initial sync: %d endpoints in %d slices after %v", n, nslices, time.Since(start).Round(time.Millisecond))

	list, err := c.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	events := make(chan *discoveryv1.EndpointSlice, 1000)
	go func() {
		for ev := range w.ResultChan() {
			if sl, ok := ev.Object.(*discoveryv1.EndpointSlice); ok {
				events <- sl
			}
		}
	}()
	var lat []time.Duration
	writes := 0
	for r := range rounds {
		// Even rounds make one pod unready, odd rounds make it ready again.
		name := fmt.Sprintf("web-%05d", ((r/2)*7919)%n)
		wantReady := r%2 == 1
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := corev1.ConditionFalse
		if wantReady {
			st = corev1.ConditionTrue
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
		if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		deadline := time.After(10 * time.Second)
	wait:
		for {
			select {
			case sl := <-events:
				writes++
				for _, ep := range sl.Endpoints {
					if ep.TargetRef != nil && ep.TargetRef.Name == name && *ep.Conditions.Ready == wantReady {
						lat = append(lat, time.Since(sent))
						break wait
					}
				}
			case <-deadline:
				t.Fatalf("round %d: slice never showed %s ready=%v", r, name, wantReady)
			}
		}
		time.Sleep(20 * time.Millisecond)
		// Drain other writes this change caused (there should be none).
		for drained := false; !drained; {
			select {
			case sl := <-events:
				writes++
				t.Logf("round %d: extra slice write %s", r, sl.Name)
			default:
				drained = true
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))].Round(10 * time.Microsecond) }
	t.Logf("EndpointSlice update latency, one of %d pods changing, %d changes: p50 %v p90 %v p99 %v max %v; slice writes per change %.2f",
		n, rounds, q(0.5), q(0.9), q(0.99), lat[len(lat)-1].Round(10*time.Microsecond), float64(writes)/float64(rounds))
}

// benchCacheMemory: the controller process's memory once its informers
// (typed pods for endpoints and node lifecycle, metadata pods for the
// garbage collector) hold N pods.
func benchCacheMemory(t *testing.T) {
	n := 200000
	if v := os.Getenv("MYRIAD_BENCH_PODS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil {
			t.Fatal(err)
		}
	}
	s, err := startAPIServer(filepath.Join(t.TempDir(), "api"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	c := s.protoClient(t)
	ns := "bench-mem"
	mkNamespace(t, c, ns)
	createPods(t, c, ns, n, 32, func(i int) *corev1.Pod {
		p := testPod(fmt.Sprintf("p-%06d", i), fmt.Sprintf("node-%d", i%10000))
		p.Labels = map[string]string{"app": fmt.Sprintf("app-%d", i%1000)}
		return p
	})
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	start := time.Now()
	p := startControllerManager(t, s, myControllers, "--metrics-address="+addr)
	waitFor(t, 300*time.Second, func() bool { return strings.Contains(p.log.String(), "garbage collector synced") })
	synced := time.Since(start)
	time.Sleep(5 * time.Second)
	before := scrape(t, "http://"+addr+"/metrics")
	// A heap profile with gc=1 collects first: the live heap after it is
	// what the caches hold.
	if resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1"); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	after := scrape(t, "http://"+addr+"/metrics")
	t.Logf("controller manager with %d pods cached: synced in %v; heap in use %.0f MiB (%.0f MiB after a GC, %.1f KiB per pod), RSS %.0f MiB",
		n, synced.Round(time.Millisecond), before["go_memstats_heap_inuse_bytes"]/(1<<20), after["go_memstats_heap_inuse_bytes"]/(1<<20),
		after["go_memstats_heap_inuse_bytes"]/1024/float64(n), after["process_resident_memory_bytes"]/(1<<20))
}

// scrape reads the unlabelled gauges of a /metrics page.
func scrape(t *testing.T, url string) map[string]float64 {
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		var name string
		var v float64
		if strings.HasPrefix(line, "#") {
			continue
		}
		if _, err := fmt.Sscanf(line, "%s %g", &name, &v); err == nil {
			out[name] = v
		}
	}
	return out
}

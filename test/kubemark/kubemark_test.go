package kubemark

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// nodeNames are the kubemark nodes every test here shares.
var nodeNames = []string{"kubemark-0", "kubemark-1", "kubemark-2"}

// cluster is `myriad up` with the kubemark nodes joined to it.
type cluster struct {
	work, kubeconfig string
	cs               *kubernetes.Clientset
	// bootstrap: the nodes joined by TLS bootstrap.
	bootstrap bool
	// kubeletPorts are the nodes' --kubelet-port.
	kubeletPorts map[string]int32
	procs        []*proc
}

// proc is one child process and its combined output.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func start(t *testing.T, name string, env []string, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.Env = append(os.Environ(), env...)
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// build builds what the test runs: myriad from the main module, and
// kubemark from this module (MYRIAD and KUBEMARK name prebuilt ones). A kubemark
// that cannot be built skips the test (fails it under KUBEMARK_REQUIRED):
// it needs the k8s.io/kubernetes module and several minutes of compiling
// the first time.
func build(t *testing.T) (myriad, kubemark string) {
	t.Helper()
	dir := t.TempDir()
	myriad = os.Getenv("MYRIAD")
	if myriad == "" {
		myriad = filepath.Join(dir, "myriad")
		cmd := exec.Command("go", "build", "-o", myriad, "./cmd/myriad")
		cmd.Dir = "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building myriad: %v\n%s", err, out)
		}
	}
	if k := os.Getenv("KUBEMARK"); k != "" {
		return myriad, k
	}
	kubemark = filepath.Join(dir, "kubemark")
	start := time.Now()
	// CI sets KUBEMARK_REQUIRED: there a failed build is a failure, not
	// a reason to skip.
	skip := t.Skipf
	if os.Getenv("KUBEMARK_REQUIRED") != "" {
		skip = t.Fatalf
	}
	ldflags, err := exec.Command("./ldflags.sh").Output()
	if err != nil {
		skip("kubemark cannot be built here: ldflags.sh: %v", err)
	}
	cmd := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", kubemark, "k8s.io/kubernetes/cmd/kubemark")
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("kubemark (k8s.io/kubernetes/cmd/kubemark) cannot be built here, so the upstream kubelet cannot be tried: %v\n%s", err, out)
	}
	t.Logf("built kubemark in %v", time.Since(start).Round(time.Second))
	return myriad, kubemark
}

// startCluster starts myriad up and the kubemark nodes, each with its own
// node client certificate, and waits until every node is Ready.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	myriad, kubemark := build(t)
	c := &cluster{work: t.TempDir(), kubeletPorts: map[string]int32{}}
	data := filepath.Join(c.work, "data")
	c.kubeconfig = filepath.Join(data, "kubeconfig")
	port := freePort(t)
	apiserver := start(t, "myriad", nil, myriad, "up", "--data-dir", data, "--secure-port", strconv.Itoa(port))
	c.procs = append(c.procs, apiserver)
	t.Cleanup(func() {
		// Nodes first, so that the server does not log their lost
		// connections as it stops.
		for i := len(c.procs) - 1; i >= 0; i-- {
			c.procs[i].stop()
		}
		if t.Failed() {
			for _, p := range c.procs {
				out := p.out.String()
				if len(out) > 20000 {
					out = "…" + out[len(out)-20000:]
				}
				t.Logf("--- %s output ---\n%s", p.name, out)
			}
		}
	})
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if apiserver.exited() {
			return false, fmt.Errorf("myriad exited:\n%s", apiserver.out.String())
		}
		_, err := os.Stat(c.kubeconfig)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("myriad up: %v", err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}

	server := fmt.Sprintf("https://127.0.0.1:%d", port)
	// TLS bootstrap with a bootstrap token where this myriad can make
	// one; before that, each node's own client certificate.
	help, _ := exec.Command(myriad, "kubeconfig", "--help").CombinedOutput()
	bootstrap := strings.Contains(string(help), "-bootstrap")
	if env := os.Getenv("JOIN"); env != "" {
		bootstrap = env == "bootstrap"
	}
	c.bootstrap = bootstrap
	bootstrapKC := filepath.Join(c.work, "bootstrap.kubeconfig")
	if bootstrap {
		if out, err := exec.Command(myriad, "kubeconfig", "--data-dir", data, "--bootstrap", "--server", server, "-o", bootstrapKC).CombinedOutput(); err != nil {
			t.Fatalf("myriad kubeconfig --bootstrap: %v\n%s", err, out)
		}
		t.Log("nodes join by TLS bootstrap with a bootstrap token")
	} else {
		t.Log("nodes join with their own client certificates (myriad kubeconfig --node)")
	}
	for _, name := range nodeNames {
		kc := filepath.Join(c.work, name+".kubeconfig")
		var creds []string
		if bootstrap {
			// The kubelet gets its client certificate through a CSR and
			// writes kc itself.
			creds = []string{"--bootstrap-kubeconfig=" + bootstrapKC, "--cert-dir=" + filepath.Join(c.work, "certs-"+name)}
		} else if out, err := exec.Command(myriad, "kubeconfig", "--data-dir", data, "--node", name, "--server", server, "-o", kc).CombinedOutput(); err != nil {
			t.Fatalf("myriad kubeconfig --node %s: %v\n%s", name, err, out)
		}
		// kubemark makes the kubelet's root directory under TMPDIR.
		tmp := filepath.Join(c.work, "tmp-"+name)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		c.kubeletPorts[name] = int32(freePort(t))
		c.procs = append(c.procs, start(t, name, []string{"TMPDIR=" + tmp}, kubemark, append([]string{
			"--morph=kubelet",
			"--use-host-image-service=false",
			"--name=" + name,
			"--kubeconfig=" + kc,
			"--kubelet-port=" + strconv.Itoa(int(c.kubeletPorts[name])),
			"--kubelet-read-only-port=0",
			"--v=2",
		}, creds...)...))
	}
	c.waitNodesReady(t, 3*time.Minute)
	return c
}

func (c *cluster) checkProcs(t *testing.T) {
	t.Helper()
	for _, p := range c.procs {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, p.out.String())
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *cluster) waitNodesReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		c.checkProcs(t)
		ready := 0
		var states []string
		for _, name := range nodeNames {
			n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				states = append(states, name+": "+err.Error())
				continue
			}
			if nodeReady(n) {
				ready++
			}
			states = append(states, fmt.Sprintf("%s: %v", name, readyMessage(n)))
		}
		last = strings.Join(states, "; ")
		return ready == len(nodeNames), nil
	})
	if err != nil {
		t.Fatalf("nodes not Ready within %v: %s", timeout, last)
	}
}

func readyMessage(n *corev1.Node) string {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return fmt.Sprintf("Ready=%s (%s)", cond.Status, cond.Message)
		}
	}
	return "no Ready condition"
}

func (c *cluster) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", c.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestKubemark runs upstream v1.34's kubelet (kubemark's hollow node: the
// real kubelet over a fake container runtime) against Myriad: three nodes
// join with their node identities, go Ready and stay Ready, run a
// Deployment whose pods report IPs and Ready conditions, terminate a
// deleted pod, and are drained with kubectl drain.
func TestKubemark(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl is not on PATH")
	}
	c := startCluster(t)
	ctx := context.Background()

	t.Run("nodes stay Ready", func(t *testing.T) {
		// The kubelet's heartbeats: a Lease renewed every 10 s, and
		// status PATCHes whenever something changes (at least every 5
		// minutes). Watch for longer than the node lifecycle
		// controller's grace period (50 s) and check that no node leaves
		// Ready meanwhile.
		const observe = 60 * time.Second
		// The kubelet creates its Lease once its Node exists, on its
		// next try (up to 10 s after registering).
		first := map[string]time.Time{}
		for _, name := range nodeNames {
			var l *coordinationv1.Lease
			err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				var err error
				l, err = c.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
				return err == nil, nil
			})
			if err != nil {
				t.Fatalf("no lease of %s: %v", name, err)
			}
			first[name] = renewTime(l)
		}
		deadline := time.Now().Add(observe)
		for time.Now().Before(deadline) {
			c.checkProcs(t)
			for _, name := range nodeNames {
				n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !nodeReady(n) {
					t.Fatalf("%s left Ready: %s", name, readyMessage(n))
				}
			}
			time.Sleep(2 * time.Second)
		}
		for _, name := range nodeNames {
			l, err := c.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !renewTime(l).After(first[name]) {
				t.Errorf("lease of %s not renewed in %v (renewTime %v)", name, observe, renewTime(l))
			}
			if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].Name != name {
				t.Errorf("lease of %s owner references %+v", name, l.OwnerReferences)
			}
			if _, err := c.cs.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("CSINode of %s: %v", name, err)
			}
			n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Where the API server dials the kubelet (logs, exec, proxy).
			if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; p != c.kubeletPorts[name] {
				t.Errorf("%s: kubelet endpoint port %d, want %d", name, p, c.kubeletPorts[name])
			}
			if n.Status.NodeInfo.KubeletVersion == "" || n.Status.Capacity.Pods().IsZero() || len(n.Status.Addresses) == 0 {
				t.Errorf("%s status incomplete: nodeInfo %+v capacity %v addresses %v", name, n.Status.NodeInfo, n.Status.Capacity, n.Status.Addresses)
			}
		}
	})

	t.Run("tls bootstrap", func(t *testing.T) {
		if !c.bootstrap {
			t.Skip("this myriad has no `kubeconfig --bootstrap`: the nodes joined with client certificates")
		}
		// Each kubelet asked for its client certificate with a CSR as a
		// bootstrapper; the approver and signer issued it.
		csrs, err := c.cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		issued := 0
		for _, csr := range csrs.Items {
			if csr.Spec.SignerName == "kubernetes.io/kube-apiserver-client-kubelet" && len(csr.Status.Certificate) > 0 &&
				strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") {
				issued++
			}
		}
		if issued < len(nodeNames) {
			t.Fatalf("%d kubelet client certificates issued to bootstrappers, want %d", issued, len(nodeNames))
		}
	})

	const ns = "default"
	labels := map[string]string{"app": "kubemark-e2e"}
	t.Run("deployment runs", func(t *testing.T) {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr(int32(6)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: mustQuantity("10m"),
						}},
					}}},
				},
			},
		}
		if _, err := c.cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.waitPodsRunning(t, ns, labels, 6, 2*time.Minute)
		if out := c.kubectl(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=60s"); !strings.Contains(out, "successfully rolled out") {
			t.Fatalf("rollout status: %s", out)
		}
	})

	t.Run("deleted pod terminates", func(t *testing.T) {
		pods := c.runningPods(t, ns, labels)
		victim := pods[0]
		if err := c.cs.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// A graceful delete leaves the pod to its kubelet, which stops
		// the containers and then deletes it for good (grace 0, with the
		// pod's UID as precondition).
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			p, err := c.cs.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			if err == nil && p.UID != victim.UID {
				return true, nil
			}
			return false, err
		})
		if err != nil {
			t.Fatalf("pod %s on %s not terminated by its kubelet: %v", victim.Name, victim.Spec.NodeName, err)
		}
		c.waitPodsRunning(t, ns, labels, 6, 2*time.Minute)
	})

	t.Run("ephemeral container", func(t *testing.T) {
		// kubectl debug adds an ephemeral container through
		// pods/ephemeralcontainers; the kubelet starts it and reports it.
		p := c.runningPods(t, ns, labels)[0]
		c.kubectl(t, "debug", "-n", ns, p.Name, "--image=busybox:1.36", "--target=web", "-c", "dbg", "--profile=general")
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			cur, err := c.cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, st := range cur.Status.EphemeralContainerStatuses {
				if st.Name == "dbg" && st.State.Running != nil {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("ephemeral container dbg of %s not reported running by %s: %v", p.Name, p.Spec.NodeName, err)
		}
	})

	t.Run("resize", func(t *testing.T) {
		// pods/resize changes the spec in place; the kubelet observes the
		// new generation and answers with its verdict in the pod's
		// status (kubemark's stub container manager reports no
		// allocatable capacity, so it is PodResizePending/Infeasible, as
		// against upstream's API server).
		p := c.runningPods(t, ns, labels)[1]
		patch := []byte(`{"spec":{"containers":[{"name":"web","resources":{"requests":{"cpu":"20m"}}}]}}`)
		resized, err := c.cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize")
		if err != nil {
			t.Fatal(err)
		}
		if got := resized.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "20m" || resized.Generation != p.Generation+1 {
			t.Fatalf("after resize: cpu %s generation %d (was %d)", got, resized.Generation, p.Generation)
		}
		var last corev1.PodStatus
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			cur, err := c.cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = cur.Status
			if cur.Status.ObservedGeneration != resized.Generation {
				return false, nil
			}
			for _, cond := range cur.Status.Conditions {
				if cond.Type == corev1.PodResizePending || cond.Type == corev1.PodResizeInProgress {
					return true, nil
				}
			}
			// Actuated at once: the container reports the new request.
			for _, st := range cur.Status.ContainerStatuses {
				if st.Resources != nil && st.Resources.Requests.Cpu().String() == "20m" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("kubelet did not answer the resize of %s: %v (status %+v)", p.Name, err, last)
		}
	})

	t.Run("drain", func(t *testing.T) {
		const node = "kubemark-0"
		before := 0
		for _, p := range c.runningPods(t, ns, labels) {
			if p.Spec.NodeName == node {
				before++
			}
		}
		if before == 0 {
			t.Fatalf("no pod on %s to drain", node)
		}
		out := c.kubectl(t, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s")
		// "evicted", not "deleted": kubectl drain evicts only when
		// discovery names pods/eviction's kind policy/v1 Eviction.
		if !strings.Contains(out, "evicted") {
			t.Errorf("kubectl drain evicted nothing from %s (it ran %d pods):\n%s", node, before, out)
		}
		n, err := c.cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !n.Spec.Unschedulable {
			t.Errorf("%s not cordoned after drain", node)
		}
		c.waitPodsRunning(t, ns, labels, 6, 2*time.Minute)
		for _, p := range c.runningPods(t, ns, labels) {
			if p.Spec.NodeName == node {
				t.Errorf("pod %s still on drained %s", p.Name, node)
			}
		}
		c.kubectl(t, "uncordon", node)
		// The drained node is still Ready: draining is not a failure.
		c.waitNodesReady(t, 30*time.Second)
	})
}

func renewTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// runningPods are the pods matching labels that are not being deleted.
func (c *cluster) runningPods(t *testing.T, ns string, labels map[string]string) []corev1.Pod {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: labels})})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

// waitPodsRunning waits until want pods match labels, each Running on a
// kubemark node with a pod IP and the Ready condition.
func (c *cluster) waitPodsRunning(t *testing.T, ns string, labels map[string]string, want int, timeout time.Duration) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		c.checkProcs(t)
		pods := c.runningPods(t, ns, labels)
		ok := 0
		var states []string
		for _, p := range pods {
			ready := false
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if p.Status.Phase == corev1.PodRunning && ready && p.Status.PodIP != "" && len(p.Status.PodIPs) > 0 && strings.HasPrefix(p.Spec.NodeName, "kubemark-") {
				ok++
			}
			states = append(states, fmt.Sprintf("%s on %q: %s ready=%v ip=%q", p.Name, p.Spec.NodeName, p.Status.Phase, ready, p.Status.PodIP))
		}
		last = strings.Join(states, "; ")
		return len(pods) == want && ok == want, nil
	})
	if err != nil {
		t.Fatalf("want %d running, ready pods with IPs within %v: %s", want, timeout, last)
	}
}

func ptr[T any](v T) *T { return &v }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

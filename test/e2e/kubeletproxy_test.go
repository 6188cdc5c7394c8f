package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/myriad-k8s/myriad/internal/kubeletclient/kubelettest"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// TestKubectlReachesKubelet: kubectl logs, logs -f, exec (WebSocket and
// SPDY), port-forward and get --raw nodes/proxy go through `myriad up` to
// a kubelet API server (upstream's streaming server) whose serving
// certificate the cluster CA signed, and which accepts only clients the
// cluster CA signed — so the API server's own kubelet client certificate
// is what gets it in.
func TestKubectlReachesKubelet(t *testing.T) {
	dir := t.TempDir()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startCommand("up", dir, port, "--kubelet-proxy-allow-loopback", "--kubelet-timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Error(err)
		}
	}()
	caCert, caKey, err := pki.LoadCA(filepath.Join(dir, pki.CACertFile), filepath.Join(dir, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubelettest.Start(&kubelettest.CA{Cert: caCert, Key: caKey}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()

	ctx := context.Background()
	c := s.client(t)
	node := func(name string, port int32, addrs ...corev1.NodeAddress) {
		t.Helper()
		n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = addrs
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := func(name, node string) {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
		}}
		p, err := c.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// kubectl port-forward wants a running pod; no kubelet here
		// reports status, so the test does.
		p.Status.Phase = corev1.PodRunning
		if _, err := c.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// kp-node offers only an InternalIP (upstream's default order would
	// prefer a Hostname); kp-bare no address at all.
	node("kp-node", kubelet.Port, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"})
	node("kp-bare", 10250)
	pod("web", "kp-node")
	pod("stray", "kp-bare")

	t.Run("logs", func(t *testing.T) {
		out := s.mustKubectl(t, "", "logs", "web")
		if want := "line 1 of default/web/app\nline 2 of default/web/app\nline 3 of default/web/app\n"; out != want {
			t.Fatalf("kubectl logs = %q, want %q", out, want)
		}
		reqs := kubelet.Requests()
		if last := reqs[len(reqs)-1]; last.ClientCN != pki.KubeletClientUser {
			t.Fatalf("kubelet saw client %q", last.ClientCN)
		}
	})
	t.Run("logs -f", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", s.kubeconfig, "logs", "-f", "web")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		sc := bufio.NewScanner(stdout)
		for i := 0; i < kubelettest.LogLines+5; i++ {
			if !sc.Scan() {
				t.Fatalf("kubectl logs -f ended after %d lines: %v", i, sc.Err())
			}
		}
	})
	t.Run("exec over WebSocket", func(t *testing.T) {
		// stdout alone: kubectl's WebSocket client may log a known race
		// of its own ("Unknown stream id 1, discarding message": the
		// server's empty ready frame arrives before kubectl made its
		// streams) on stderr.
		if out, stderr, err := kubectlStdout(s, "exec", "web", "--", "echo", "hello", "websocket"); err != nil || out != "hello websocket\n" {
			t.Fatalf("exec = %q, %v\n%s", out, err, stderr)
		}
		cmd := exec.Command("kubectl", "--kubeconfig", s.kubeconfig, "exec", "-i", "web", "--", "cat")
		cmd.Stdin = strings.NewReader("piped in\n")
		if out, err := cmd.Output(); err != nil || string(out) != "piped in\n" {
			t.Fatalf("exec -i cat = %q, %v", out, err)
		}
		out, err := s.kubectl(t, "", "exec", "web", "--", "exit", "7")
		var exitErr *exec.ExitError
		if !asExit(err, &exitErr) || exitErr.ExitCode() != 7 {
			t.Fatalf("exec exit 7: %v %q", err, out)
		}
	})
	t.Run("exec over SPDY", func(t *testing.T) {
		out, err := kubectlEnv(t, s.kubeconfig, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "exec", "web", "--", "echo", "hello", "spdy")
		if err != nil || out != "hello spdy\n" {
			t.Fatalf("exec = %q, %v", out, err)
		}
	})
	for _, ws := range []string{"true", "false"} {
		t.Run("port-forward websockets="+ws, func(t *testing.T) {
			portForwardEcho(t, s.kubeconfig, "KUBECTL_PORT_FORWARD_WEBSOCKETS="+ws)
		})
	}
	t.Run("nodes/proxy", func(t *testing.T) {
		if out := s.mustKubectl(t, "", "get", "--raw", "/api/v1/nodes/kp-node/proxy/healthz"); out != "ok" {
			t.Fatalf("nodes/proxy/healthz = %q", out)
		}
	})
	t.Run("bad container", func(t *testing.T) {
		out, err := s.kubectl(t, "", "logs", "web", "-c", "nope")
		if err == nil || !strings.Contains(out, "container nope is not valid for pod web") {
			t.Fatalf("kubectl logs -c nope: %v %q", err, out)
		}
	})
	t.Run("node without address", func(t *testing.T) {
		out, err := s.kubectl(t, "", "logs", "stray")
		if err == nil || !strings.Contains(out, `node "kp-bare": no preferred addresses found; known addresses: []`) {
			t.Fatalf("kubectl logs on a node without address: %v %q", err, out)
		}
	})
	t.Run("silent kubelet", func(t *testing.T) {
		ln, err := kubelettest.Silent()
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		node("kp-hung", int32(ln.Addr().(*net.TCPAddr).Port), corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"})
		pod("stuck", "kp-hung")
		start := time.Now()
		if out, err := s.kubectl(t, "", "logs", "stuck"); err == nil {
			t.Fatalf("logs from a silent kubelet succeeded: %q", out)
		}
		if out, err := s.kubectl(t, "", "exec", "stuck", "--", "true"); err == nil {
			t.Fatalf("exec on a silent kubelet succeeded: %q", out)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("two requests to a silent kubelet took %v with --kubelet-timeout=1s", d)
		}
	})
	t.Run("RBAC", func(t *testing.T) {
		// alice may read pods and their logs, not exec into them.
		if _, err := c.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "log-reader"},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get", "list"}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-log-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "log-reader"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		kc := s.identityKubeconfig(t, "--user", "alice")
		var out string
		var err error
		deadline := time.Now().Add(10 * time.Second)
		for out, err = kubectlWith(t, kc, "", "logs", "web"); err != nil && time.Now().Before(deadline); out, err = kubectlWith(t, kc, "", "logs", "web") {
			time.Sleep(100 * time.Millisecond) // the authorizer's cache catching up with the binding
		}
		if err != nil || !strings.HasPrefix(out, "line 1 of default/web/app") {
			t.Fatalf("alice's kubectl logs: %v %q", err, out)
		}
		out, err = kubectlWith(t, kc, "", "exec", "web", "--", "echo", "hi")
		if err == nil || !strings.Contains(out, `User "alice" cannot create resource "pods/exec" in API group "" in the namespace "default"`) &&
			!strings.Contains(out, `User "alice" cannot get resource "pods/exec" in API group "" in the namespace "default"`) {
			t.Fatalf("alice's kubectl exec: %v %q", err, out)
		}
	})
	for _, proto := range []string{"spdy", "websocket"} {
		t.Run("memory of open exec streams over "+proto, func(t *testing.T) {
			execStreamCost(t, s, proto)
		})
	}
	t.Run("kubelet client binding", func(t *testing.T) {
		b, err := c.RbacV1().ClusterRoleBindings().Get(ctx, "myriad:kube-apiserver-kubelet-client", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if b.RoleRef.Name != "system:kubelet-api-admin" || len(b.Subjects) != 1 || b.Subjects[0].Name != pki.KubeletClientUser {
			t.Fatalf("binding %+v", b)
		}
		// What a kubelet with webhook authorization asks before it lets
		// the API server exec: allowed.
		for _, sub := range []string{"proxy", "log", "stats"} {
			sar, err := c.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               pki.KubeletClientUser,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Resource: "nodes", Subresource: sub, Name: "kp-node"},
			}}, metav1.CreateOptions{})
			if err != nil || !sar.Status.Allowed {
				t.Fatalf("SubjectAccessReview for nodes/%s: %+v, %v", sub, sar, err)
			}
		}
	})
}

func asExit(err error, target **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	if ok {
		*target = e
	}
	return ok
}

// kubectlEnv runs kubectl with one extra environment variable.
func kubectlEnv(t testing.TB, kubeconfig, env string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)

// portForwardEcho runs kubectl port-forward to web's port 8080 (whose
// kubelet echoes) and checks that bytes come back.
func portForwardEcho(t *testing.T, kubeconfig, env string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "port-forward", "pod/web", ":8080")
	cmd.Env = append(os.Environ(), env)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	var local string
	var printed []string
	for local == "" && sc.Scan() {
		printed = append(printed, sc.Text())
		if m := forwardingRE.FindStringSubmatch(sc.Text()); m != nil {
			local = m[1]
		}
	}
	if local == "" {
		t.Fatalf("kubectl port-forward printed no forwarding line: %v\n%s", sc.Err(), strings.Join(printed, "\n"))
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+local, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte("ping through the kubelet\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != "ping through the kubelet\n" {
		t.Fatalf("echo through port-forward: %q, %v", got, err)
	}
}

// execStreamCost opens streams exec sessions (kubelet: "cat", stdin held
// open) through s and reports what each costs the server: heap in use
// after a GC, and goroutines, read from its pprof endpoints.
func execStreamCost(t *testing.T, s *server, proto string) {
	const streams = 100
	cfg := s.restConfig(t)
	c := s.client(t)
	before, gBefore := serverHeap(t, s), serverGoroutines(t, s)
	type session struct {
		w    *io.PipeWriter
		done chan error
	}
	var sessions []session
	for range streams {
		u := c.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("web").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Command: []string{"cat"}, Stdin: true, Stdout: true}, scheme.ParameterCodec).URL()
		var ex remotecommand.Executor
		var err error
		if proto == "spdy" {
			ex, err = remotecommand.NewSPDYExecutor(cfg, "POST", u)
		} else {
			ex, err = remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		}
		if err != nil {
			t.Fatal(err)
		}
		r, w := io.Pipe()
		out := &lineWaiter{line: make(chan struct{}, 1)}
		done := make(chan error, 1)
		go func() {
			done <- ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: r, Stdout: out})
		}()
		// The stream is open end to end once a line comes back.
		if _, err := w.Write([]byte("up\n")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-out.line:
		case err := <-done:
			t.Fatalf("exec ended early: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatal("no echo within 20s")
		}
		sessions = append(sessions, session{w: w, done: done})
	}
	during, gDuring := serverHeap(t, s), serverGoroutines(t, s)
	for _, ss := range sessions {
		_ = ss.w.Close()
	}
	for _, ss := range sessions {
		select {
		case err := <-ss.done:
			if err != nil {
				t.Errorf("exec: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("exec did not end after stdin closed")
		}
	}
	perStream := (during - before) / streams
	t.Logf("%s: %d open exec streams cost the server %d KiB heap (%d KiB each) and %d goroutines (%.1f each)",
		proto, streams, (during-before)>>10, perStream>>10, gDuring-gBefore, float64(gDuring-gBefore)/streams)
	// SPDY passes through: two copy loops and two TLS connections. A
	// translated WebSocket stream also holds upstream's SPDY client
	// connection to the kubelet (zlib header state, ping loop, a
	// goroutine per stream). Past these bounds something buffers what it
	// should stream.
	limit := int64(512 << 10)
	if proto == "websocket" {
		limit = 2 << 20
	}
	if perStream > limit {
		t.Errorf("%d KiB per open exec stream over %s", perStream>>10, proto)
	}
}

type lineWaiter struct{ line chan struct{} }

func (l *lineWaiter) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\n') >= 0 {
		select {
		case l.line <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

var heapInuseRE = regexp.MustCompile(`# HeapInuse = (\d+)`)

// serverHeap is the server's HeapInuse right after a GC (pprof's gc=1).
func serverHeap(t *testing.T, s *server) int64 {
	t.Helper()
	data, err := s.client(t).CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("gc", "1").Param("debug", "1").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := heapInuseRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no HeapInuse in the heap profile")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

var goroutinesRE = regexp.MustCompile(`goroutine profile: total (\d+)`)

func serverGoroutines(t *testing.T, s *server) int {
	t.Helper()
	data, err := s.client(t).CoreV1().RESTClient().Get().AbsPath("/debug/pprof/goroutine").Param("debug", "1").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := goroutinesRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no total in the goroutine profile")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

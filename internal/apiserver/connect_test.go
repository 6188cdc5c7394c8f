package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/myriad-k8s/myriad/internal/kubeletclient"
	"github.com/myriad-k8s/myriad/internal/kubeletclient/kubelettest"
)

// kubeletEnv is a Server whose kubelet client trusts ca and presents a
// client certificate for kube-apiserver-kubelet-client, and a test
// kubelet signed by the same CA.
type kubeletEnv struct {
	*testEnv
	kubelet *kubelettest.Server
	ca      *kubelettest.CA
}

func newKubeletEnv(t *testing.T, timeout time.Duration, allowLoopback bool) *kubeletEnv {
	t.Helper()
	return newKubeletEnvOpts(t, timeout, allowLoopback)
}

// newKubeletEnvTB is newKubeletEnv for benchmarks.
func newKubeletEnvTB(b *testing.B, timeout time.Duration) *kubeletEnv {
	b.Helper()
	return newKubeletEnvOpts(b, timeout, false)
}

func newKubeletEnvOpts(t testing.TB, timeout time.Duration, allowLoopback bool) *kubeletEnv {
	t.Helper()
	ca, err := kubelettest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubelettest.Start(ca, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Close)
	caFile, certFile, keyFile, err := ca.WriteClientFiles(t.TempDir(), "kube-apiserver-kubelet-client")
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubeletclient.New(kubeletclient.Config{CAFile: caFile, CertFile: certFile, KeyFile: keyFile, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withConfig(func(c *Config) {
		c.Kubelet = KubeletConfig{Client: client, AllowLoopbackProxy: allowLoopback}
	}))
	return &kubeletEnv{testEnv: e, kubelet: kubelet, ca: ca}
}

// addNode registers a node whose kubelet is at addr:port.
func (e *kubeletEnv) addNode(name string, port int32, addrs ...corev1.NodeAddress) {
	e.t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	node, err := e.cs.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	node.Status.Addresses = addrs
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	updated, err := e.cs.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	// The kubelet path reads nodes from the watch cache; wait until it holds
	// the status with the addresses, not just the node.
	waitFor(e.t, 10*time.Second, "node status in cache", func() bool {
		obj, err := e.api.GetObject(context.Background(), nodesGVR, "", name, "0")
		return err == nil && obj.(*corev1.Node).ResourceVersion == updated.ResourceVersion
	})
}

// addPod creates pod name with the given containers, bound to node ("":
// unscheduled).
func (e *kubeletEnv) addPod(name, node string, containers ...string) {
	e.t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	pod.Spec.NodeName = node
	if _, err := e.cs.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func loopback() corev1.NodeAddress {
	return corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}
}

// waitCached waits until the watch cache (which the connect handlers
// read) has the pod.
func (e *kubeletEnv) waitCached(pod string) {
	e.t.Helper()
	waitFor(e.t, 10*time.Second, "pod in cache", func() bool {
		_, err := e.api.GetObject(context.Background(), podsGVR, "default", pod, "0")
		return err == nil
	})
}

func TestPodLogs(t *testing.T) {
	e := newKubeletEnv(t, 5*time.Second, false)
	e.addNode("n1", e.kubelet.Port, loopback())
	e.addPod("p", "n1", "c")
	e.addPod("two", "n1", "a", "b")
	e.addPod("pending", "", "c")
	e.addNode("nowhere", 10250)
	e.addPod("lost", "nowhere", "c")
	e.waitCached("lost")

	t.Run("log", func(t *testing.T) {
		data, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Timestamps: true, TailLines: ptr(int64(2))}).DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if want := "line 1 of default/p/c\nline 2 of default/p/c\nline 3 of default/p/c\n"; string(data) != want {
			t.Fatalf("log = %q, want %q", data, want)
		}
		reqs := e.kubelet.Requests()
		last := reqs[len(reqs)-1]
		if last.Path != "/containerLogs/default/p/c" || last.Query != "tailLines=2&timestamps=true" || last.ClientCN != "kube-apiserver-kubelet-client" {
			t.Fatalf("kubelet saw %+v", last)
		}
	})
	t.Run("follow", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		rc, err := e.cs.CoreV1().Pods("default").GetLogs("two", &corev1.PodLogOptions{Container: "b", Follow: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		sc := bufio.NewScanner(rc)
		// More lines than the kubelet had at the start arrive one by one:
		// the stream is flushed through, not buffered.
		for i := 1; i <= kubelettest.LogLines+3; i++ {
			if !sc.Scan() {
				t.Fatalf("stream ended after %d lines: %v", i-1, sc.Err())
			}
			if want := "line " + strconv.Itoa(i) + " of default/two/b"; sc.Text() != want {
				t.Fatalf("line %d = %q, want %q", i, sc.Text(), want)
			}
		}
	})
	t.Run("unscheduled pod: empty log", func(t *testing.T) {
		r := e.do("GET", "/api/v1/namespaces/default/pods/pending/log", nil)
		if r.code != http.StatusOK || len(r.body) != 0 {
			t.Fatalf("got %d %q", r.code, r.body)
		}
	})
	for _, tc := range []struct {
		name, query string
		code        int
		reason      metav1.StatusReason
		msg         string
	}{
		{"negative tailLines", "tailLines=-1", 422, metav1.StatusReasonInvalid, `PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0`},
		{"zero limitBytes", "limitBytes=0", 422, metav1.StatusReasonInvalid, "limitBytes: Invalid value: 0: must be greater than 0"},
		{"zero sinceSeconds", "sinceSeconds=0", 422, metav1.StatusReasonInvalid, "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{"both since", "sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z", 422, metav1.StatusReasonInvalid, "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{"malformed tailLines", "tailLines=abc", 400, metav1.StatusReasonBadRequest, `parsing "abc"`},
		{"malformed sinceTime", "sinceTime=yesterday", 400, metav1.StatusReasonBadRequest, `cannot parse "yesterday"`},
		{"stream not enabled", "stream=Stdout", 422, metav1.StatusReasonInvalid, "stream: Forbidden: may not be specified"},
		{"unknown container", "container=nope", 400, metav1.StatusReasonBadRequest, "container nope is not valid for pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("GET", "/api/v1/namespaces/default/pods/p/log?"+tc.query, nil)
			st := r.status(t)
			if r.code != tc.code || st.Reason != tc.reason || !strings.Contains(st.Message, tc.msg) {
				t.Fatalf("got %d %s %q, want %d %s containing %q", r.code, st.Reason, st.Message, tc.code, tc.reason, tc.msg)
			}
		})
	}
	t.Run("two containers, none named", func(t *testing.T) {
		r := e.do("GET", "/api/v1/namespaces/default/pods/two/log", nil)
		st := r.status(t)
		if r.code != 400 || st.Message != "a container name must be specified for pod two, choose one of: [a b]" {
			t.Fatalf("got %d %q", r.code, st.Message)
		}
	})
	t.Run("node without address", func(t *testing.T) {
		r := e.do("GET", "/api/v1/namespaces/default/pods/lost/log", nil)
		st := r.status(t)
		if r.code != http.StatusServiceUnavailable || !strings.Contains(st.Message, `node "nowhere": no preferred addresses found; known addresses: []`) {
			t.Fatalf("got %d %q", r.code, st.Message)
		}
	})
	t.Run("node gains an address", func(t *testing.T) {
		// The decoded Node is memoized; an update must be seen at once.
		node, err := e.cs.CoreV1().Nodes().Get(context.Background(), "nowhere", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Addresses = []corev1.NodeAddress{loopback()}
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = e.kubelet.Port
		if _, err := e.cs.CoreV1().Nodes().UpdateStatus(context.Background(), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "log from the updated node", func() bool {
			r := e.do("GET", "/api/v1/namespaces/default/pods/lost/log", nil)
			return r.code == http.StatusOK && strings.HasPrefix(string(r.body), "line 1 of default/lost/c")
		})
	})
	t.Run("unknown pod", func(t *testing.T) {
		if r := e.do("GET", "/api/v1/namespaces/default/pods/ghost/log", nil); r.code != http.StatusNotFound {
			t.Fatalf("got %d %s", r.code, r.body)
		}
	})
	t.Run("POST is not a log verb", func(t *testing.T) {
		if r := e.do("POST", "/api/v1/namespaces/default/pods/p/log", nil); r.code != http.StatusMethodNotAllowed {
			t.Fatalf("got %d %s", r.code, r.body)
		}
	})
}

func TestPodExec(t *testing.T) {
	e := newKubeletEnv(t, 5*time.Second, false)
	e.addNode("n1", e.kubelet.Port, loopback())
	e.addPod("p", "n1", "c")
	e.addPod("pending", "", "c")
	e.waitCached("pending")

	for _, proto := range []string{"spdy", "websocket"} {
		t.Run(proto, func(t *testing.T) {
			run := func(cmd []string, stdin io.Reader) (string, error) {
				opts := &corev1.PodExecOptions{Container: "c", Command: cmd, Stdout: true, Stderr: true, Stdin: stdin != nil}
				u := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
					VersionedParams(opts, scheme.ParameterCodec).URL()
				var ex remotecommand.Executor
				var err error
				if proto == "spdy" {
					ex, err = remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
				} else {
					ex, err = remotecommand.NewWebSocketExecutor(e.cfg, "GET", u.String())
				}
				if err != nil {
					t.Fatal(err)
				}
				var out, errOut bytes.Buffer
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Stderr: &errOut})
				return out.String(), err
			}
			if out, err := run([]string{"echo", "hello", proto}, nil); err != nil || out != "hello "+proto+"\n" {
				t.Fatalf("echo: %q, %v", out, err)
			}
			if out, err := run([]string{"cat"}, strings.NewReader("stdin goes through\n")); err != nil || out != "stdin goes through\n" {
				t.Fatalf("cat: %q, %v", out, err)
			}
			_, err := run([]string{"exit", "3"}, nil)
			var exitErr exec.CodeExitError
			if !errors.As(err, &exitErr) || exitErr.Code != 3 {
				t.Fatalf("exit 3: %v (%T)", err, err)
			}
		})
	}
	t.Run("attach", func(t *testing.T) {
		u := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("attach").
			VersionedParams(&corev1.PodAttachOptions{Stdout: true}, scheme.ParameterCodec).URL()
		ex, err := remotecommand.NewWebSocketExecutor(e.cfg, "GET", u.String())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &out}); err != nil || out.String() != "attached to c\n" {
			t.Fatalf("attach: %q, %v", out.String(), err)
		}
	})
	t.Run("unscheduled pod", func(t *testing.T) {
		r := e.do("POST", "/api/v1/namespaces/default/pods/pending/exec?command=true&stdout=1", nil)
		if st := r.status(t); r.code != 400 || st.Message != "pod pending does not have a host assigned" {
			t.Fatalf("got %d %q", r.code, st.Message)
		}
	})
	t.Run("unknown container", func(t *testing.T) {
		r := e.do("POST", "/api/v1/namespaces/default/pods/p/exec?command=true&stdout=1&container=x", nil)
		if st := r.status(t); r.code != 400 || st.Message != "container x is not valid for pod p" {
			t.Fatalf("got %d %q", r.code, st.Message)
		}
	})
	t.Run("not an upgrade", func(t *testing.T) {
		if r := e.do("POST", "/api/v1/namespaces/default/pods/p/exec?command=true&stdout=1", nil); r.code != http.StatusBadRequest {
			t.Fatalf("got %d %s", r.code, r.body)
		}
	})
}

// TestKubeletTimeout: a kubelet that accepts connections and never
// answers costs a request the timeout, not a hang.
func TestKubeletTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newKubeletEnv(t, timeout, false)
	ln, err := kubelettest.Silent()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	e.addNode("hung", int32(ln.Addr().(*net.TCPAddr).Port), loopback())
	e.addPod("p", "hung", "c")
	e.waitCached("p")

	start := time.Now()
	r := e.do("GET", "/api/v1/namespaces/default/pods/p/log", nil)
	if st := r.status(t); r.code != http.StatusServiceUnavailable || !strings.Contains(st.Message, "error trying to reach the kubelet") {
		t.Fatalf("log: %d %q", r.code, st.Message)
	}
	for _, proto := range []string{"spdy", "websocket"} {
		u := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true}, scheme.ParameterCodec).URL()
		var ex remotecommand.Executor
		if proto == "spdy" {
			ex, err = remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
		} else {
			ex, err = remotecommand.NewWebSocketExecutor(e.cfg, "GET", u.String())
		}
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
		// The WebSocket translator reports any failure as an internal
		// error over the stream; SPDY gets the Status with the cause: the
		// handshake timer's words, or the connection deadline's i/o
		// timeout when that fires first (both are the same timeout).
		timedOut := err != nil && (strings.Contains(err.Error(), "did not complete the TLS handshake within 300ms") || strings.Contains(err.Error(), "i/o timeout"))
		if err == nil || ctx.Err() != nil || (proto == "spdy" && !timedOut) {
			t.Fatalf("exec over %s against a silent kubelet: err %v, ctx %v", proto, err, ctx.Err())
		}
		cancel()
	}
	if d := time.Since(start); d > 10*timeout+2*time.Second {
		t.Fatalf("three requests took %v with a %v timeout", d, timeout)
	}

	// Past the handshake: the TLS layer answers, the HTTP layer never.
	// A log without follow and an SPDY exec still fail in time.
	tlsOnly, err := kubelettest.SilentAfterHandshake(e.ca)
	if err != nil {
		t.Fatal(err)
	}
	defer tlsOnly.Close()
	e.addNode("mute", int32(tlsOnly.Addr().(*net.TCPAddr).Port), loopback())
	e.addPod("q", "mute", "c")
	e.waitCached("q")
	start = time.Now()
	r = e.do("GET", "/api/v1/namespaces/default/pods/q/log", nil)
	if st := r.status(t); r.code != http.StatusServiceUnavailable || !strings.Contains(st.Message, "timeout awaiting response headers") {
		t.Fatalf("log from a mute kubelet: %d %q", r.code, st.Message)
	}
	u := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("q").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil || ctx.Err() != nil {
		t.Fatalf("SPDY exec on a mute kubelet: err %v, ctx %v", err, ctx.Err())
	}
	if d := time.Since(start); d > 6*timeout+2*time.Second {
		t.Fatalf("two requests to a mute kubelet took %v with a %v timeout", d, timeout)
	}
}

func TestNodeProxy(t *testing.T) {
	e := newKubeletEnv(t, 5*time.Second, true)
	e.addNode("n1", e.kubelet.Port, loopback())
	data, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/n1/proxy/healthz").DoRaw(context.Background())
	if err != nil || string(data) != "ok" {
		t.Fatalf("nodes/proxy/healthz: %q, %v", data, err)
	}
	reqs := e.kubelet.Requests()
	if last := reqs[len(reqs)-1]; last.Path != "/healthz" || last.ClientCN != "kube-apiserver-kubelet-client" {
		t.Fatalf("kubelet saw %+v", last)
	}
	if r := e.do("GET", "/api/v1/nodes/n1/proxy/nothing/here", nil); r.code != http.StatusNotFound {
		t.Fatalf("unknown kubelet path: %d %s", r.code, r.body)
	}

	strict := newKubeletEnv(t, 5*time.Second, false)
	strict.addNode("n1", strict.kubelet.Port, loopback())
	r := strict.do("GET", "/api/v1/nodes/n1/proxy/healthz", nil)
	if st := r.status(t); r.code != 400 || st.Message != "address not allowed" {
		t.Fatalf("loopback kubelet without AllowLoopbackProxy: %d %q", r.code, st.Message)
	}
}

func TestPodAndServiceProxy(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		fmt.Fprintf(w, "backend %s %s", r.Method, r.URL.RequestURI())
	}))
	defer backend.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	port, _ := strconv.Atoi(portStr)

	e := newKubeletEnv(t, 5*time.Second, true)
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: "x", Ports: []corev1.ContainerPort{{ContainerPort: int32(port)}}}}}}
	pod, err := e.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIPs = []corev1.PodIP{{IP: "127.0.0.1"}}
	pod.Status.PodIP = "127.0.0.1"
	if _, err := e.cs.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := e.cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Endpoints may not hold loopback addresses (validation, as
	// upstream), so services/proxy reaching a backend is tested in
	// package kubeletproxy; here its errors are.
	empty := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	if _, err := e.cs.CoreV1().Services("default").Create(ctx, empty, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Endpoints("default").Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "objects cached", func() bool {
		p, err := e.api.GetObject(ctx, podsGVR, "default", "web", "0")
		_, err2 := e.api.GetObject(ctx, endpointsGVR, "default", "empty", "0")
		return err == nil && err2 == nil && len(p.(*corev1.Pod).Status.PodIPs) > 0
	})

	for _, tc := range []struct{ method, path, want string }{
		{"GET", "/api/v1/namespaces/default/pods/web/proxy/hello?x=1", "backend GET /hello?x=1"},
		{"POST", "/api/v1/namespaces/default/pods/web:" + portStr + "/proxy/a/b/", "backend POST /a/b/"},
		{"GET", "/api/v1/namespaces/default/pods/http:web:" + portStr + "/proxy", "backend GET /"},
	} {
		r := e.do(tc.method, tc.path, nil)
		if r.code != http.StatusOK || string(r.body) != tc.want {
			t.Fatalf("%s %s: %d %q, want %q", tc.method, tc.path, r.code, r.body, tc.want)
		}
	}
	for _, tc := range []struct{ path, msg string }{
		{"/api/v1/namespaces/default/services/web:81/proxy/", `no service port 81 found for service "web"`},
		{"/api/v1/namespaces/default/services/empty/proxy/", `no endpoints available for service "empty"`},
	} {
		if r := e.do("GET", tc.path, nil); r.code != http.StatusServiceUnavailable || !strings.Contains(r.status(t).Message, tc.msg) {
			t.Fatalf("%s: %d %s", tc.path, r.code, r.body)
		}
	}
	if r := e.do("GET", "/api/v1/namespaces/default/services/web/proxy/", nil); r.code != http.StatusNotFound {
		t.Fatalf("service without endpoints object: %d %s", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/services/ghost/proxy/", nil); r.code != http.StatusNotFound {
		t.Fatalf("unknown service: %d %s", r.code, r.body)
	}
}

// TestConnectDiscovery: the connect subresources are listed as upstream
// lists them.
func TestConnectDiscovery(t *testing.T) {
	e := newEnv(t)
	var list metav1.APIResourceList
	r := e.do("GET", "/api/v1", nil)
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]metav1.APIResource{}
	for _, res := range list.APIResources {
		got[res.Name] = res
	}
	for name, want := range map[string]struct {
		kind  string
		verbs string
	}{
		"pods/exec":        {"PodExecOptions", "create get"},
		"pods/attach":      {"PodAttachOptions", "create get"},
		"pods/portforward": {"PodPortForwardOptions", "create get"},
		"pods/log":         {"Pod", "get"},
		"pods/proxy":       {"PodProxyOptions", "create delete get patch update"},
		"nodes/proxy":      {"NodeProxyOptions", "create delete get patch update"},
		"services/proxy":   {"ServiceProxyOptions", "create delete get patch update"},
	} {
		res, ok := got[name]
		if !ok {
			t.Errorf("%s not in discovery", name)
			continue
		}
		if res.Kind != want.kind || strings.Join(res.Verbs, " ") != want.verbs {
			t.Errorf("%s: kind %s verbs %v, want %s %s", name, res.Kind, res.Verbs, want.kind, want.verbs)
		}
	}
}

// TestKubeletProxyMetrics: each answered connect request is one sample
// of the backend's time to answer, by subresource and code (101 for a
// stream that began).
func TestKubeletProxyMetrics(t *testing.T) {
	e := newKubeletEnv(t, 5*time.Second, false)
	e.addNode("n1", e.kubelet.Port, loopback())
	e.addPod("p", "n1", "c")
	e.waitCached("p")
	if _, err := e.cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).DoRaw(context.Background()); err != nil {
		t.Fatal(err)
	}
	u := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: []string{"echo"}, Stdout: true}, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard}); err != nil {
		t.Fatal(err)
	}
	mfs, err := e.api.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() != "myriad_kubelet_proxy_request_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			got[strings.TrimSpace(key)] = m.GetHistogram().GetSampleCount()
		}
	}
	for _, key := range []string{"code=200 resource=pods subresource=log", "code=101 resource=pods subresource=exec"} {
		if got[key] != 1 {
			t.Errorf("%s: %d samples (all: %v)", key, got[key], got)
		}
	}
}

package kubeletserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	utilexec "k8s.io/utils/exec"
)

// executor is how a test reaches exec and attach: SPDY as the API server
// dials kubelets, or WebSocket with v4.channel.k8s.io, the newest version
// the kubelet speaks over WebSocket.
type executor func(t testing.TB, c *rest.Config, method string, u *url.URL) remotecommand.Executor

var executors = map[string]executor{
	"SPDY": func(t testing.TB, c *rest.Config, method string, u *url.URL) remotecommand.Executor {
		e, err := remotecommand.NewSPDYExecutor(c, method, u)
		if err != nil {
			t.Fatal(err)
		}
		return e
	},
	"WebSocket": func(t testing.TB, c *rest.Config, _ string, u *url.URL) remotecommand.Executor {
		e, err := remotecommand.NewWebSocketExecutorForProtocols(c, "GET", u.String(), "v4.channel.k8s.io")
		if err != nil {
			t.Fatal(err)
		}
		return e
	},
}

func execURL(base, path string, cmd []string, stdin, tty bool) *url.URL {
	q := url.Values{"command": cmd, "output": {"1"}}
	if stdin {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	u, _ := url.Parse(base + path + "?" + q.Encode())
	return u
}

func TestExec(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		name     string
		path     string
		cmd      []string
		stdin    string
		tty      bool
		wantOut  string
		wantCode int // exit code; -1: some other error
	}{
		{"echo", "/exec/default/web/app", []string{"echo", "hello", "world"}, "", false, "hello world\n", 0},
		{"anything else echoes its command line", "/exec/default/web/app", []string{"ls", "-l", "/"}, "", false, "ls -l /\n", 0},
		{"cat copies stdin", "/exec/default/web/app", []string{"cat"}, "line one\nline two\n", false, "line one\nline two\n", 0},
		{"tty", "/exec/default/web/app", []string{"hostname"}, "", true, "web\n", 0},
		{"with uid", "/exec/default/web/uid-web/sidecar", []string{"true"}, "", false, "", 0},
		{"false", "/exec/default/web/app", []string{"false"}, "", false, "", 1},
		{"exit N", "/exec/default/web/app", []string{"exit", "42"}, "", false, "", 42},
		{"sh -c exit N", "/exec/default/web/app", []string{"sh", "-c", "exit 3"}, "", false, "", 3},
		{"unknown pod", "/exec/default/nope/app", []string{"true"}, "", false, "", -1},
		{"wrong uid", "/exec/default/web/other-uid/app", []string{"true"}, "", false, "", -1},
		{"unknown container", "/exec/default/web/nope", []string{"true"}, "", false, "", -1},
	}
	for proto, newExec := range executors {
		for _, tt := range tests {
			if proto == "WebSocket" && tt.stdin != "" {
				// v4.channel.k8s.io over WebSocket cannot close stdin (v5
				// added that, and the kubelet does not speak v5): cat
				// would never see the end of its input, on a real kubelet
				// too.
				continue
			}
			t.Run(proto+"/"+tt.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				e := newExec(t, ts.restConfig(), "POST", execURL(ts.url, tt.path, tt.cmd, tt.stdin != "", tt.tty))
				var stdout, stderr bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &stdout, Tty: tt.tty}
				if !tt.tty {
					opts.Stderr = &stderr
				}
				if tt.stdin != "" {
					opts.Stdin = strings.NewReader(tt.stdin)
				}
				err := e.StreamWithContext(ctx, opts)
				var exitErr utilexec.ExitError
				switch {
				case tt.wantCode == 0 && err != nil:
					t.Fatalf("exec: %v", err)
				case tt.wantCode > 0 && (!errors.As(err, &exitErr) || exitErr.ExitStatus() != tt.wantCode):
					t.Fatalf("exec: %v; want exit code %d", err, tt.wantCode)
				case tt.wantCode < 0 && (err == nil || errors.As(err, &exitErr)):
					t.Fatalf("exec: %v; want a refused request", err)
				}
				if stdout.String() != tt.wantOut || stderr.Len() != 0 {
					t.Errorf("stdout %q, stderr %q; want %q and nothing", stdout.String(), stderr.String(), tt.wantOut)
				}
			})
		}
	}
}

func TestAttachStreamsTheLog(t *testing.T) {
	for proto, newExec := range executors {
		t.Run(proto, func(t *testing.T) {
			ts := newTestServer(t, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			u, _ := url.Parse(ts.url + "/attach/default/web/app?output=1&error=1")
			e := newExec(t, ts.restConfig(), "POST", u)
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: io.Discard}) }()
			r := bufio.NewReader(pr)
			for _, k := range []int{10, 11} {
				line, err := r.ReadString('\n')
				if err != nil || line != fmt.Sprintf("hollow-node-0 default/web/app line %d\n", k) {
					t.Fatalf("read %q, %v; want line %d", line, err, k)
				}
				waitForTimer(t, ts)
				ts.clock.Step(time.Second)
			}
			cancel()
			pr.Close()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("attach did not end with the client")
			}
		})
	}
}

// TestPortForwardEchoes forwards a local port over SPDY, as the API server
// dials a kubelet, and checks that the bytes come back.
func TestPortForwardEchoes(t *testing.T) {
	ts := newTestServer(t, nil)
	rt, upgrader, err := spdy.RoundTripperFor(ts.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(ts.url + "/portForward/default/web")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080", "0:9090"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ports {
		for i := range 2 { // two connections over one forwarding
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.Local))
			if err != nil {
				t.Fatal(err)
			}
			msg := fmt.Sprintf("ping %d to %d", i, p.Remote)
			if _, err := c.Write([]byte(msg)); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(msg))
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
				t.Fatalf("port %d: read %q, %v; want %q", p.Remote, buf, err, msg)
			}
			c.Close()
		}
	}
}

func TestPortForwardUnknownPod(t *testing.T) {
	ts := newTestServer(t, nil)
	client := ts.httpClient(t, &ts.pki.apiserverCert)
	for path, want := range map[string]string{
		"/portForward/default/nope":          "pod does not exist\n",
		"/portForward/default/web/other-uid": "pod not found\n",
	} {
		resp, err := client.Post(ts.url+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || string(body) != want {
			t.Errorf("POST %s: %d %q; want 404 %q", path, resp.StatusCode, body, want)
		}
	}
}

func TestAuthentication(t *testing.T) {
	tests := []struct {
		name      string
		anonymous bool
		cert      func(*testPKI) *[2][]byte
		path      string
		wantCode  int
	}{
		{"API server's client certificate", false, func(p *testPKI) *[2][]byte { return &p.apiserverCert }, "/containerLogs/default/web/app", 200},
		{"no certificate", false, func(*testPKI) *[2][]byte { return nil }, "/containerLogs/default/web/app", 401},
		{"no certificate, exec", false, func(*testPKI) *[2][]byte { return nil }, "/exec/default/web/app?command=true&output=1", 401},
		{"a node's certificate", false, func(p *testPKI) *[2][]byte { return &p.nodeCert }, "/containerLogs/default/web/app", 403},
		{"no certificate, healthz", false, func(*testPKI) *[2][]byte { return nil }, "/healthz", 200},
		{"anonymous allowed", true, func(*testPKI) *[2][]byte { return nil }, "/containerLogs/default/web/app", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, func(c *Config) { c.Anonymous = tt.anonymous })
			resp, err := ts.httpClient(t, tt.cert(ts.pki)).Get(ts.url + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode {
				t.Errorf("GET %s: %d, want %d", tt.path, resp.StatusCode, tt.wantCode)
			}
		})
	}
	t.Run("a certificate from another CA", func(t *testing.T) {
		ts := newTestServer(t, nil)
		other := newTestPKI(t)
		c := ts.httpClient(t, &other.apiserverCert)
		if resp, err := c.Get(ts.url + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatal("the handshake accepted a client certificate the cluster CA did not issue")
		}
	})
}

func TestNewValidates(t *testing.T) {
	pods := &staticPods{}
	for name, cfg := range map[string]Config{
		"no pods":              {ClientCAs: newTestPKI(t).pool()},
		"no CA, not anonymous": {Pods: pods},
		"negative interval":    {Pods: pods, Anonymous: true, LogInterval: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// TestPortForwardWebSocket speaks the kubelet's WebSocket port-forward
// protocol (v4.channel.k8s.io: per port a data and an error channel, each
// opened with the port number) as a raw client: client-go has no client
// for it, since the API server tunnels SPDY over WebSocket instead.
func TestPortForwardWebSocket(t *testing.T) {
	ts := newTestServer(t, nil)
	tc := ts.httpClient(t, &ts.pki.apiserverCert).Transport.(*http.Transport).TLSClientConfig
	d := websocket.Dialer{TLSClientConfig: tc, Subprotocols: []string{"v4.channel.k8s.io"}}
	if _, resp, err := d.Dial("wss"+strings.TrimPrefix(ts.url, "https")+"/portForward/default/web", nil); err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("without a port: %v, %v; want 400", resp, err)
	}
	conn, resp, err := d.Dial("wss"+strings.TrimPrefix(ts.url, "https")+"/portForward/default/web?port=8080", nil)
	if err != nil {
		body := ""
		if resp != nil {
			b, _ := io.ReadAll(resp.Body)
			body = resp.Status + " " + string(b)
		}
		t.Fatal(err, body)
	}
	defer conn.Close()
	if resp.Header.Get("Sec-WebSocket-Protocol") != "v4.channel.k8s.io" {
		t.Fatalf("negotiated %q", resp.Header.Get("Sec-WebSocket-Protocol"))
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	read := func() []byte {
		t.Helper()
		_, msg, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	// 8080 little-endian is 0x90 0x1f.
	for _, want := range [][]byte{{0, 0x90, 0x1f}, {1, 0x90, 0x1f}} {
		if got := read(); !bytes.Equal(got, want) {
			t.Fatalf("opening frame %v, want %v", got, want)
		}
	}
	if err := conn.WriteMessage(websocket.BinaryMessage, append([]byte{0}, "ping"...)); err != nil {
		t.Fatal(err)
	}
	if got := read(); string(got) != "\x00ping" {
		t.Fatalf("echo %q, want %q", got, "\x00ping")
	}
}

func TestRun(t *testing.T) {
	ts := newTestServer(t, nil)
	client := ts.httpClient(t, &ts.pki.apiserverCert)
	for _, tt := range []struct {
		path, want string
		code       int
	}{
		{"/run/default/web/app?cmd=echo+hi+there", "hi there\n", 200},
		{"/run/default/web/uid-web/app?cmd=hostname", "web\n", 200},
		{"/run/default/web/app?cmd=false", "command terminated with non-zero exit code: exit status 1\n", 500},
		{"/run/default/web/nope?cmd=true", `container "nope" not found in pod "web"` + "\n", 404},
		{"/run/default/nope/app?cmd=true", "pod does not exist\n", 404},
	} {
		resp, err := client.Post(ts.url+tt.path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || string(body) != tt.want {
			t.Errorf("POST %s: %d %q; want %d %q", tt.path, resp.StatusCode, body, tt.code, tt.want)
		}
	}
}

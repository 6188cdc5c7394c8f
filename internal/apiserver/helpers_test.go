package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// testEnv is a real Server over a real embedded store in t.TempDir(),
// served by an httptest.Server.
type testEnv struct {
	t     testing.TB
	dir   string
	store *embedded.Store
	api   *Server
	srv   *httptest.Server
	cfg   *rest.Config
	cs    kubernetes.Interface
	// proto is a clientset speaking protobuf.
	proto kubernetes.Interface

	configure func(*Config)
	wrap      func(http.Handler) http.Handler
	// beforeStart runs between New and Start (SetAuthorization, ...).
	beforeStart func(*Server)
	// token is the bearer token e.cs and e.proto send (for a wrap that
	// authenticates).
	token string
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// envOption adjusts a testEnv before its Server starts.
type envOption func(*testEnv)

// withConfig adjusts the Server's Config (every start, restarts included).
func withConfig(f func(*Config)) envOption { return func(e *testEnv) { e.configure = f } }

// withHandler wraps the Server in the HTTP server's handler.
func withHandler(wrap func(http.Handler) http.Handler) envOption {
	return func(e *testEnv) { e.wrap = wrap }
}

// newEnv starts a store, a Server and an HTTP server, and creates the
// "default" namespace.
func newEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	e := &testEnv{t: t, dir: t.TempDir()}
	for _, o := range opts {
		o(e)
	}
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Options{Dir: e.dir, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("opening store: %v", err)
	}
	e.store = st
	t.Cleanup(func() { _ = st.Close() })
	e.startServer()
	e.createNamespace("default")
	return e
}

// startServer starts a Server (and HTTP server) over e.store; a previous
// one keeps running until stopServer.
func (e *testEnv) startServer() {
	t := e.t
	t.Helper()
	cfg := Config{Store: e.store, Logger: quietLogger()}
	if e.configure != nil {
		e.configure(&cfg)
	}
	api, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if e.beforeStart != nil {
		e.beforeStart(api)
	}
	if err := api.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	e.api = api
	t.Cleanup(api.Stop)
	waitFor(t, 30*time.Second, "caches ready", api.Ready)
	var h http.Handler = api
	if e.wrap != nil {
		h = e.wrap(api)
	}
	e.srv = httptest.NewServer(h)
	t.Cleanup(e.srv.Close)
	e.cfg = &rest.Config{Host: e.srv.URL, QPS: -1, BearerToken: e.token}
	if e.cs, err = kubernetes.NewForConfig(e.cfg); err != nil {
		t.Fatal(err)
	}
	pc := rest.CopyConfig(e.cfg)
	pc.ContentType = "application/vnd.kubernetes.protobuf"
	pc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	if e.proto, err = kubernetes.NewForConfig(pc); err != nil {
		t.Fatal(err)
	}
}

// stopServer stops the HTTP server and the Server, leaving the store open.
func (e *testEnv) stopServer() {
	e.srv.Close()
	e.api.Stop()
}

func (e *testEnv) createNamespace(name string) {
	e.t.Helper()
	_, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// response is a raw HTTP answer.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends a raw request; headers are "Name: value" strings.
func (e *testEnv) do(method, path string, body []byte, headers ...string) response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

// status decodes a JSON metav1.Status from r, failing if it is not one.
func (r response) status(t *testing.T) metav1.Status {
	t.Helper()
	var st metav1.Status
	if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
		t.Fatalf("want a JSON Status, got %d %q (err %v)", r.code, r.body, err)
	}
	if int(st.Code) != r.code {
		t.Fatalf("Status.code %d differs from the HTTP code %d: %s", st.Code, r.code, r.body)
	}
	return st
}

// wantStatus checks that r is a Status with code and reason.
func (r response) wantStatus(t *testing.T, code int, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	if r.code != code {
		t.Fatalf("want HTTP %d, got %d: %s", code, r.code, r.body)
	}
	st := r.status(t)
	if st.Reason != reason {
		t.Fatalf("want reason %q, got %q: %s", reason, st.Reason, st.Message)
	}
	return st
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testPod(name, node string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "test"}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
		},
	}
}

func testConfigMap(name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       map[string]string{"k": "v"},
	}
}

func ptr[T any](v T) *T { return &v }

// rawStream opens a GET stream (a watch) with the given Accept header and
// fails unless it answers 200.
func (e *testEnv) rawStream(ctx context.Context, path, accept string) io.ReadCloser {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return resp.Body
}

package flowcontrol

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newServer is a real API server over a real embedded store, started and
// ready.
func newServer(t testing.TB) *apiserver.Server {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	api, err := apiserver.New(apiserver.Config{Store: st, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	waitFor(t, "caches ready", api.Ready)
	return api
}

// env is a server with flow control in front of it, as the control
// plane chains them, behind a test authenticator that takes the user
// from X-Test-User ("name" or "name|group1,group2").
type env struct {
	t       testing.TB
	api     *apiserver.Server
	c       *Controller
	metrics *prometheus.Registry
	srv     *httptest.Server
}

func newEnv(t testing.TB, mutate func(*Config), next http.Handler) *env {
	t.Helper()
	api := newServer(t)
	e := &env{t: t, api: api, metrics: prometheus.NewRegistry()}
	cfg := Config{API: api, Objects: api.Objects(), ServerConcurrencyLimit: 50, Metrics: e.metrics, Logger: quietLogger()}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop) // before api.Stop: cleanups run last-in first-out
	e.c = c
	if next == nil {
		next = api
	}
	e.srv = httptest.NewServer(filters.Chain(next, filters.WithRequestInfo, testAuthn, c.Filter))
	t.Cleanup(e.srv.Close)
	waitFor(t, "bootstrap configuration", func() bool {
		_, err := api.GetObject(context.Background(), flowSchemasGVR, "", flowcontrolv1.FlowSchemaNameCatchAll, "0")
		return err == nil && c.fsInf.HasSynced()
	})
	// The dispatcher digests the objects asynchronously: until it has the
	// suggested ones too, an ordinary user's request falls to catch-all.
	// A GET of one object is never rejected as expensive.
	waitFor(t, "bootstrap configuration digested", func() bool {
		resp, _ := e.do("GET", "/api/v1/namespaces/default/configmaps/probe", "bootstrap-probe", "", nil)
		return e.nameOf(resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)) == "global-default"
	})
	return e
}

func testAuthn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, groups, _ := strings.Cut(r.Header.Get("X-Test-User"), "|")
		u := &request.User{Name: name, Groups: []string{request.GroupAuthenticated}}
		if groups != "" {
			u.Groups = append(strings.Split(groups, ","), u.Groups...)
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	})
}

// serviceAccount is the X-Test-User of ServiceAccount ns/name, with the
// groups a real token carries.
func serviceAccount(ns, name string) string {
	return "system:serviceaccount:" + ns + ":" + name + "|system:serviceaccounts,system:serviceaccounts:" + ns
}

const admin = "admin|system:masters"

// do sends a request as user and returns the response (body read and
// closed into the returned string).
func (e *env) do(method, path, user, userAgent string, body io.Reader) (*http.Response, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Test-User", user)
	if userAgent != "" {
		req.Header.Set("User-Agent", userAgent)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// create writes obj through the server as the server itself.
func (e *env) create(gvrResource string, obj runtime.Object) {
	e.t.Helper()
	gvr := flowSchemasGVR
	switch gvrResource {
	case "prioritylevelconfigurations":
		gvr = priorityLevelsGVR
	case "configmaps":
		gvr = configMapsGVR
	case "namespaces":
		gvr = corev1.SchemeGroupVersion.WithResource("namespaces")
	}
	if _, err := e.api.Objects().Create(context.Background(), gvr, obj); err != nil {
		e.t.Fatalf("creating %s: %v", gvrResource, err)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// parseInfo is what filters.WithRequestInfo puts in the context.
func parseInfo(r *http.Request) (*request.RequestInfo, error) { return request.Parse(r) }

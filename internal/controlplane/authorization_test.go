package controlplane

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

var (
	admin = &request.User{Name: request.AdminUser, Groups: []string{request.GroupMasters, request.GroupAuthenticated}}
	bob   = &request.User{Name: "bob", Groups: []string{request.GroupAuthenticated}}
)

func writeWebhookKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	kc := `apiVersion: v1
kind: Config
clusters:
- name: policy
  cluster: {server: "https://127.0.0.1:1/authorize"}
users:
- name: apiserver
  user: {token: t}
contexts:
- name: policy
  context: {cluster: policy, user: apiserver}
current-context: policy
`
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultAuthorizationModes(t *testing.T) {
	if got := ParseAuthorizationModes(DefaultAuthorizationModes); strings.Join(got, ",") != "Node,RBAC" {
		t.Errorf("default modes %v, want upstream's Node,RBAC", got)
	}
}

// TestBuildAuthorizerModes builds the modes that need no API server; Node
// and RBAC are built over a real one in the e2e tests.
func TestBuildAuthorizerModes(t *testing.T) {
	webhookFile := writeWebhookKubeconfig(t)
	tests := []struct {
		name string
		cfg  AuthorizationConfig
		err  string
	}{
		{"always allow", AuthorizationConfig{Modes: []string{ModeAlwaysAllow}}, ""},
		{"deny then allow", AuthorizationConfig{Modes: []string{ModeAlwaysDeny, ModeAlwaysAllow}}, ""},
		{"webhook", AuthorizationConfig{Modes: []string{ModeWebhook, ModeAlwaysDeny}, WebhookConfigFile: webhookFile}, ""},
		{"unknown", AuthorizationConfig{Modes: []string{"ABAC"}}, `authorization-mode "ABAC" is not a valid mode (valid: AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook)`},
		{"wrong case", AuthorizationConfig{Modes: []string{"rbac"}}, `authorization-mode "rbac" is not a valid mode`},
		{"twice", AuthorizationConfig{Modes: []string{ModeAlwaysAllow, ModeAlwaysAllow}}, `authorization-mode "AlwaysAllow,AlwaysAllow" has mode specified more than once`},
		{"webhook without file", AuthorizationConfig{Modes: []string{ModeWebhook}}, "authorization-mode Webhook's authorization config file not passed"},
		{"file without webhook", AuthorizationConfig{Modes: []string{ModeAlwaysAllow}, WebhookConfigFile: webhookFile}, "cannot specify --authorization-webhook-config-file without mode Webhook"},
		{"webhook file missing", AuthorizationConfig{Modes: []string{ModeWebhook}, WebhookConfigFile: filepath.Join(t.TempDir(), "none")}, "authorization mode Webhook: webhook authorizer: loading"},
		{"negative ttl", AuthorizationConfig{Modes: []string{ModeWebhook}, WebhookConfigFile: webhookFile, WebhookCacheAuthorizedTTL: -1}, "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			az, rules, stop, err := buildAuthorizer(authorizerDeps{ctx: context.Background(), cfg: tt.cfg})
			stop()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || az == nil || rules == nil {
				t.Fatalf("%v %v %v", az, rules, err)
			}
		})
	}
}

func TestAuthorizerDecisions(t *testing.T) {
	ctx := context.Background()
	get := func(u *request.User) authz.Attributes {
		return authz.Attributes{User: u, Verb: "get", IsResourceRequest: true, Namespace: "ns", Resource: "pods", APIVersion: "v1"}
	}
	tests := []struct {
		modes []string
		user  *request.User
		want  authz.Decision
	}{
		{[]string{ModeAlwaysAllow}, bob, authz.DecisionAllow},
		// system:masters is asked first, whatever the modes say.
		{[]string{ModeAlwaysDeny}, admin, authz.DecisionAllow},
		{[]string{ModeAlwaysDeny}, bob, authz.DecisionDeny},
		{[]string{ModeAlwaysDeny, ModeAlwaysAllow}, bob, authz.DecisionDeny},
		{[]string{ModeAlwaysAllow, ModeAlwaysDeny}, bob, authz.DecisionAllow},
	}
	for _, tt := range tests {
		az, _, _, err := buildAuthorizer(authorizerDeps{ctx: ctx, cfg: AuthorizationConfig{Modes: tt.modes}})
		if err != nil {
			t.Fatal(err)
		}
		if d, _, _ := az.Authorize(ctx, get(tt.user)); d != tt.want {
			t.Errorf("%v %s: %v, want %v", tt.modes, tt.user.Name, d, tt.want)
		}
	}

	// The rule lists: AlwaysAllow reports "*" everywhere, as upstream;
	// AlwaysDeny nothing; a webhook cannot list and says so.
	_, rules, _, err := buildAuthorizer(authorizerDeps{ctx: ctx, cfg: AuthorizationConfig{Modes: []string{ModeAlwaysDeny, ModeWebhook, ModeAlwaysAllow}, WebhookConfigFile: writeWebhookKubeconfig(t)}})
	if err != nil {
		t.Fatal(err)
	}
	res, nonRes, incomplete, err := rules.RulesFor(ctx, bob, "ns")
	if err != nil || !incomplete ||
		!reflect.DeepEqual(res, []authz.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}) ||
		!reflect.DeepEqual(nonRes, []authz.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}) {
		t.Fatalf("rules %v %v %v %v", res, nonRes, incomplete, err)
	}
}

// BenchmarkAuthorizationFilter measures what WithAuthorization adds to a
// request with the mode union in front of the handler: "none" is the
// chain without it, the rest with it for an admin (system:masters
// answers), a plain user under AlwaysAllow (masters, then the mode), and
// a refused request (the 403 is written).
func BenchmarkAuthorizationFilter(b *testing.B) {
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	asUser := func(u *request.User) filters.Filter {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
			})
		}
	}
	build := func(modes ...string) authz.Authorizer {
		az, _, _, err := buildAuthorizer(authorizerDeps{ctx: context.Background(), cfg: AuthorizationConfig{Modes: modes}})
		if err != nil {
			b.Fatal(err)
		}
		return az
	}
	cases := []struct {
		name string
		h    http.Handler
		code int
	}{
		{"none", filters.Chain(ok, filters.WithRequestInfo, asUser(bob)), 200},
		{"masters", filters.Chain(ok, filters.WithRequestInfo, asUser(admin), authz.WithAuthorization(build(ModeAlwaysAllow), nil)), 200},
		{"AlwaysAllow", filters.Chain(ok, filters.WithRequestInfo, asUser(bob), authz.WithAuthorization(build(ModeAlwaysAllow), nil)), 200},
		{"AlwaysDeny/403", filters.Chain(ok, filters.WithRequestInfo, asUser(bob), authz.WithAuthorization(build(ModeAlwaysDeny), quietLog())), 403},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods/p", nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
				if w.Code != c.code {
					b.Fatalf("code %d", w.Code)
				}
			}
		})
	}
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkAuthorizer is the mode union's own cost per decision, without
// the HTTP around it.
func BenchmarkAuthorizer(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		modes []string
		user  *request.User
	}{
		{"masters", []string{ModeAlwaysDeny}, admin},
		{"AlwaysAllow", []string{ModeAlwaysAllow}, bob},
		{"AlwaysDeny", []string{ModeAlwaysDeny}, bob},
	} {
		az, _, _, err := buildAuthorizer(authorizerDeps{ctx: ctx, cfg: AuthorizationConfig{Modes: c.modes}})
		if err != nil {
			b.Fatal(err)
		}
		a := authz.Attributes{User: c.user, Verb: "get", IsResourceRequest: true, Namespace: "default", APIVersion: "v1", Resource: "pods", Name: "p"}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = az.Authorize(ctx, a)
			}
		})
	}
}

// TestAuthorizerStop: what the modes started is stopped in reverse order,
// and a mode that fails to build stops those built before it.
func TestAuthorizerStop(t *testing.T) {
	var events []string
	starting := func(name string, fail bool) modeConstructor {
		return func(authorizerDeps) (mode, error) {
			if fail {
				return mode{}, errors.New("cannot start")
			}
			events = append(events, "start "+name)
			return mode{authorizer: authz.AlwaysAllow(), stop: func() { events = append(events, "stop "+name) }}, nil
		}
	}
	known := map[string]modeConstructor{"A": starting("A", false), "B": starting("B", false), "Broken": starting("Broken", true)}
	_, _, stop, err := buildAuthorizerFrom(authorizerDeps{cfg: AuthorizationConfig{Modes: []string{"A", "B"}}}, known)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if want := []string{"start A", "start B", "stop B", "stop A"}; !reflect.DeepEqual(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	events = nil
	_, _, stop, err = buildAuthorizerFrom(authorizerDeps{cfg: AuthorizationConfig{Modes: []string{"A", "Broken", "B"}}}, known)
	stop()
	if err == nil || err.Error() != "authorization mode Broken: cannot start" {
		t.Fatalf("err %v", err)
	}
	if want := []string{"start A", "stop A"}; !reflect.DeepEqual(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
}

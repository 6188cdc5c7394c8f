package authnconfig

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
)

func TestTokenFile(t *testing.T) {
	file := writeFile(t, "tok-alice,alice,1001,\"devs,ops\"\ntok-bob,bob,1002\n")
	a, err := Build(context.Background(), Options{TokenAuthFile: file})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tests := []struct {
		token, user, uid, groups string
	}{
		{"tok-alice", "alice", "1001", "devs,ops,system:authenticated"},
		{"tok-bob", "bob", "1002", "system:authenticated"},
		{"tok-carol", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			resp, ok, err := a.Tokens.AuthenticateToken(context.Background(), tt.token, nil)
			if err != nil || ok != (tt.user != "") {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if ok && (resp.User.Name != tt.user || resp.User.UID != tt.uid || strings.Join(resp.User.Groups, ",") != tt.groups) {
				t.Fatalf("user %+v", resp.User)
			}
		})
	}
	if _, err := Build(context.Background(), Options{TokenAuthFile: writeFile(t, "tok,only-two\n")}); err == nil {
		t.Fatal("a two-column token file was accepted")
	}
}

func TestAnonymous(t *testing.T) {
	no, yes := false, true
	section := func(s string) string {
		return "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n" + s
	}
	tests := []struct {
		name   string
		opts   Options
		public []string // nil: the default paths
		err    bool
	}{
		{"default", Options{}, nil, false},
		{"--anonymous-auth=true", Options{AnonymousAuth: &yes}, nil, false},
		{"--anonymous-auth=false", Options{AnonymousAuth: &no}, []string{}, false},
		{"disabled in the file", Options{AuthenticationConfigFile: writeFile(t, section("anonymous:\n  enabled: false\n"))}, []string{}, false},
		{"conditions", Options{AuthenticationConfigFile: writeFile(t, section("anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /readyz\n"))},
			[]string{"/livez", "/readyz"}, false},
		{"enabled without conditions", Options{AuthenticationConfigFile: writeFile(t, section("anonymous:\n  enabled: true\n"))}, nil, false},
		{"both flag and file", Options{AnonymousAuth: &yes, AuthenticationConfigFile: writeFile(t, section("anonymous:\n  enabled: true\n"))}, nil, true},
		{"unknown field", Options{AuthenticationConfigFile: writeFile(t, section("anonymus:\n  enabled: true\n"))}, nil, true},
		{"invalid issuer", Options{AuthenticationConfigFile: writeFile(t, section("jwt:\n- issuer:\n    url: http://insecure.example.com\n    audiences: [a]\n  claimMappings:\n    username:\n      claim: sub\n      prefix: \"\"\n"))}, nil, true},
		{"bad CEL", Options{AuthenticationConfigFile: writeFile(t, section("jwt:\n- issuer:\n    url: https://example.com\n    audiences: [a]\n  claimMappings:\n    username:\n      expression: 'claims.sub +'\n"))}, nil, true},
		{"missing file", Options{AuthenticationConfigFile: "/nonexistent"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Build(context.Background(), tt.opts)
			if (err != nil) != tt.err {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				return
			}
			defer a.Close()
			if (a.PublicPaths == nil) != (tt.public == nil) || strings.Join(a.PublicPaths, ",") != strings.Join(tt.public, ",") {
				t.Fatalf("public paths %#v, want %#v", a.PublicPaths, tt.public)
			}
		})
	}
}

// TestWebhook runs the TokenReview webhook authenticator against a real
// HTTPS webhook.
func TestWebhook(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review authenticationv1.TokenReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.APIVersion != "authentication.k8s.io/v1" || review.Kind != "TokenReview" {
			http.Error(w, "bad review", 400)
			return
		}
		switch review.Spec.Token {
		case "good":
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "hook-user", UID: "42", Groups: []string{"hooked"},
				Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}},
			}}
		case "broken":
			http.Error(w, "boom", 500)
			return
		default:
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: false, Error: "unknown token"}
		}
		review.TypeMeta = metav1.TypeMeta{APIVersion: "authentication.k8s.io/v1", Kind: "TokenReview"}
		json.NewEncoder(w).Encode(&review)
	}))
	defer srv.Close()
	kubeconfig := `apiVersion: v1
kind: Config
clusters:
- name: hook
  cluster:
    server: ` + srv.URL + `
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte((&issuer{srv: srv}).caPEM())) + `
users:
- name: apiserver
  user: {}
contexts:
- name: hook
  context: {cluster: hook, user: apiserver}
current-context: hook
`
	a, err := Build(context.Background(), Options{WebhookConfigFile: writeFile(t, kubeconfig), WebhookCacheTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	tests := []struct {
		name, token string
		ok, err     bool
	}{
		{"accepted", "good", true, false},
		{"refused", "nope", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, ok, err := a.Tokens.AuthenticateToken(context.Background(), tt.token, nil)
			if ok != tt.ok || (err != nil) != tt.err {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if ok && (resp.User.Name != "hook-user" || resp.User.UID != "42" || resp.User.Groups[0] != "hooked" || resp.User.Extra["k"][0] != "v") {
				t.Fatalf("user %+v", resp.User)
			}
		})
	}
	before := calls.Load()
	if _, ok, _ := a.Tokens.AuthenticateToken(context.Background(), "good", nil); !ok {
		t.Fatal("cached token refused")
	}
	if calls.Load() != before {
		t.Fatal("a cached verdict called the webhook again")
	}
}

// TestAnonymousThroughAuthentication checks that the anonymous settings
// take effect in authn.WithAuthentication: disabled means 401 everywhere,
// conditions open exactly their paths.
func TestAnonymousThroughAuthentication(t *testing.T) {
	no := false
	conditions := writeFile(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n")
	tests := []struct {
		name  string
		opts  Options
		codes map[string]int
	}{
		{"default", Options{}, map[string]int{"/healthz": 200, "/livez": 200, "/version": 200, "/api/v1/pods": 401}},
		{"disabled", Options{AnonymousAuth: &no}, map[string]int{"/healthz": 401, "/livez": 401, "/version": 401, "/api/v1/pods": 401}},
		{"conditions", Options{AuthenticationConfigFile: conditions}, map[string]int{"/healthz": 401, "/livez": 200, "/version": 401, "/api/v1/pods": 401}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Build(context.Background(), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			srv := httptest.NewServer(authn.WithAuthentication(authn.BearerToken(authn.NewAdminToken("admin-token-0123456789abcdef")),
				authn.Config{PublicPaths: a.PublicPaths})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
			defer srv.Close()
			for path, code := range tt.codes {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != code {
					t.Errorf("%s: %d, want %d", path, resp.StatusCode, code)
				}
			}
		})
	}
}

// A JWT issuer may not be one of the ServiceAccount issuers, whose tokens
// the server verifies itself (upstream's disallowedIssuers).
func TestDisallowedIssuers(t *testing.T) {
	file := writeFile(t, `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: https://kubernetes.default.svc.cluster.local
    audiences: [myriad]
  claimMappings:
    username: {claim: sub, prefix: ""}
`)
	_, err := Build(context.Background(), Options{AuthenticationConfigFile: file, DisallowedIssuers: []string{"https://kubernetes.default.svc.cluster.local"}})
	if err == nil || !strings.Contains(err.Error(), "jwt[0].issuer.url") || !strings.Contains(err.Error(), "disallowed issuers") {
		t.Fatalf("err = %v, want the issuer refused", err)
	}
}

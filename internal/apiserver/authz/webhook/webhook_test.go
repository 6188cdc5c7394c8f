package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// policyServer is a real HTTPS authorization webhook: alice is allowed,
// mallory denied, "crash" makes it fail, anyone else gets no opinion.
type policyServer struct {
	*httptest.Server
	mu struct {
		sync.Mutex
		calls int
		last  authorizationv1.SubjectAccessReview
	}
}

func newPolicyServer(t testing.TB) *policyServer {
	p := &policyServer{}
	p.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(r.Body).Decode(&sar); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.mu.calls++
		p.mu.last = sar
		p.mu.Unlock()
		switch sar.Spec.User {
		case "alice":
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "alice may"}
		case "mallory":
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "never mallory"}
		case "crash":
			http.Error(w, "policy engine down", http.StatusInternalServerError)
			return
		default:
			sar.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no policy for " + sar.Spec.User}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&sar)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *policyServer) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.calls
}

// kubeconfig writes the webhook's kubeconfig, trusting its certificate.
func (p *policyServer) kubeconfig(t testing.TB) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["policy"] = &clientcmdapi.Cluster{Server: p.URL + "/authorize", CertificateAuthorityData: ca}
	cfg.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{Token: "apiserver-token"}
	cfg.Contexts["policy"] = &clientcmdapi.Context{Cluster: "policy", AuthInfo: "apiserver"}
	cfg.CurrentContext = "policy"
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

var fastRetry = &Backoff{Initial: time.Millisecond, Factor: 1, Steps: 2}

func TestWebhookDecisions(t *testing.T) {
	p := newPolicyServer(t)
	a, err := New(Config{KubeconfigFile: p.kubeconfig(t), RetryBackoff: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	attrs := func(user string) authz.Attributes {
		return authz.Attributes{User: &request.User{Name: user, UID: "u1", Groups: []string{"g1", request.GroupAuthenticated}, Extra: map[string][]string{"k": {"v"}}},
			Verb: "get", IsResourceRequest: true, Namespace: "ns", APIGroup: "apps", APIVersion: "v1", Resource: "deployments", Subresource: "scale", Name: "d"}
	}
	tests := []struct {
		user     string
		decision authz.Decision
		reason   string
		err      string
	}{
		{"alice", authz.DecisionAllow, "alice may", ""},
		{"mallory", authz.DecisionDeny, "never mallory", ""},
		{"bob", authz.DecisionNoOpinion, "no policy for bob", ""},
		// Upstream's default failure policy: no opinion, with the error.
		{"crash", authz.DecisionNoOpinion, "", "policy engine down"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			d, reason, err := a.Authorize(ctx, attrs(tt.user))
			if d != tt.decision || reason != tt.reason {
				t.Fatalf("got %v %q, want %v %q", d, reason, tt.decision, tt.reason)
			}
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err %v, want %q", err, tt.err)
			}
		})
	}

	// What the webhook was sent, for alice: upstream's v1 review.
	p.mu.Lock()
	p.mu.calls = 0
	p.mu.Unlock()
	if _, _, err := a.Authorize(ctx, attrs("carol")); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	got := p.mu.last
	p.mu.Unlock()
	want := authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "ns", Verb: "get", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Name: "d"},
		User:               "carol", UID: "u1", Groups: []string{"g1", request.GroupAuthenticated}, Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
	}
	if got.APIVersion != "authorization.k8s.io/v1" || got.Kind != "SubjectAccessReview" || !reflect.DeepEqual(got.Spec, want) {
		t.Fatalf("sent %s %s %+v\nwant %+v", got.APIVersion, got.Kind, got.Spec, want)
	}

	// Non-resource requests carry the path.
	if d, _, _ := a.Authorize(ctx, authz.Attributes{User: &request.User{Name: "alice"}, Verb: "get", Path: "/metrics"}); d != authz.DecisionAllow {
		t.Fatalf("non-resource: %v", d)
	}
	p.mu.Lock()
	nra := p.mu.last.Spec.NonResourceAttributes
	p.mu.Unlock()
	if nra == nil || nra.Path != "/metrics" || nra.Verb != "get" {
		t.Fatalf("non-resource attributes %+v", nra)
	}
}

func TestWebhookCache(t *testing.T) {
	p := newPolicyServer(t)
	// Allowed answers are kept; unauthorized ones expire at once.
	a, err := New(Config{KubeconfigFile: p.kubeconfig(t), AuthorizedTTL: time.Hour, UnauthorizedTTL: time.Nanosecond, RetryBackoff: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	alice := authz.Attributes{User: &request.User{Name: "alice"}, Verb: "list", IsResourceRequest: true, Resource: "pods"}
	bob := authz.Attributes{User: &request.User{Name: "bob"}, Verb: "list", IsResourceRequest: true, Resource: "pods"}
	for range 3 {
		if d, _, _ := a.Authorize(ctx, alice); d != authz.DecisionAllow {
			t.Fatal("alice not allowed")
		}
	}
	if n := p.calls(); n != 1 {
		t.Fatalf("alice: %d webhook calls, want 1 (cached)", n)
	}
	for range 3 {
		if d, _, _ := a.Authorize(ctx, bob); d != authz.DecisionNoOpinion {
			t.Fatal("bob allowed")
		}
	}
	if n := p.calls(); n != 4 {
		t.Fatalf("bob: %d webhook calls in all, want 4 (not cached)", n)
	}
	// A different question is not answered from alice's cache entry.
	alice.Verb = "delete"
	_, _, _ = a.Authorize(ctx, alice)
	if n := p.calls(); n != 5 {
		t.Fatalf("%d calls, want 5", n)
	}
}

func TestWebhookConfigErrors(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Fatal("no kubeconfig accepted")
	}
	if _, err := New(Config{KubeconfigFile: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Fatal("missing kubeconfig accepted")
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("clusters: [: nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{KubeconfigFile: bad}); err == nil {
		t.Fatal("malformed kubeconfig accepted")
	}
}

func TestWebhookUntrustedServer(t *testing.T) {
	p := newPolicyServer(t)
	// A kubeconfig that does not trust the server's certificate: the
	// call fails and the authorizer has no opinion.
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["policy"] = &clientcmdapi.Cluster{Server: p.URL}
	cfg.Contexts["policy"] = &clientcmdapi.Context{Cluster: "policy", AuthInfo: "x"}
	cfg.AuthInfos["x"] = &clientcmdapi.AuthInfo{}
	cfg.CurrentContext = "policy"
	path := filepath.Join(t.TempDir(), "kc")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{KubeconfigFile: path, RetryBackoff: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := a.Authorize(context.Background(), authz.Attributes{User: &request.User{Name: "alice"}, Verb: "get", Path: "/"})
	if d != authz.DecisionNoOpinion || err == nil || p.calls() != 0 {
		t.Fatalf("untrusted: %v %v, %d calls", d, err, p.calls())
	}
}

// BenchmarkWebhookCached is the cost of a decision the cache answers (the
// common case at 5,000 requests/s): upstream keys its cache by the
// JSON-encoded review spec.
func BenchmarkWebhookCached(b *testing.B) {
	p := newPolicyServer(b)
	a, err := New(Config{KubeconfigFile: p.kubeconfig(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	attrs := authz.Attributes{User: &request.User{Name: "alice", Groups: []string{"g", request.GroupAuthenticated}}, Verb: "get", IsResourceRequest: true, Namespace: "ns", APIVersion: "v1", Resource: "pods", Name: "p"}
	if d, _, _ := a.Authorize(ctx, attrs); d != authz.DecisionAllow {
		b.Fatal("not allowed")
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = a.Authorize(ctx, attrs)
	}
	if p.calls() != 1 {
		b.Fatalf("%d webhook calls", p.calls())
	}
}

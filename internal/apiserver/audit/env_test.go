package audit

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/impersonation"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

const (
	adminToken = "admin-token-0123456789abcdef0123456789"
	eveToken   = "eve-token-0123456789abcdef0123456789abc"
)

// denyEveSecrets is the authorizer of the tests: eve may not touch
// Secrets, everyone else may do anything.
var denyEveSecrets = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.UserName() == "eve" && a.Resource == "secrets" {
		return authz.DecisionDeny, "eve may not", nil
	}
	return authz.DecisionAllow, "", nil
})

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// chain wraps h in the filters in the order the control plane uses.
func chain(h http.Handler, a *Auditor, az authz.Authorizer) http.Handler {
	tokens := authn.NewStaticTokens(map[string]*request.User{
		adminToken: {Name: request.AdminUser, Groups: []string{request.GroupMasters}},
		eveToken:   {Name: "eve"},
	})
	return filters.Chain(h,
		filters.WithRequestInfo,
		WithAuditID,
		a.WithFailedAuthenticationAudit(),
		authn.WithAuthentication(authn.BearerToken(tokens), authn.Config{Logger: quiet()}),
		a.WithAudit(),
		impersonation.WithImpersonation(az, quiet()),
		authz.WithAuthorization(az, quiet()),
	)
}

// serverEnv is a real API server over a real embedded store behind the
// chain, with clients for the admin and for eve.
type serverEnv struct {
	api   http.Handler
	srv   *httptest.Server
	admin *rest.Config
}

func newServerEnv(t testing.TB, a *Auditor) *serverEnv {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	api, err := apiserver.New(apiserver.Config{Store: st, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := api.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(api.Stop)
	for deadline := time.Now().Add(30 * time.Second); !api.Ready(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("API server never ready")
		}
	}
	srv := httptest.NewServer(chain(api, a, denyEveSecrets))
	t.Cleanup(srv.Close)
	return &serverEnv{api: api, srv: srv, admin: &rest.Config{Host: srv.URL, BearerToken: adminToken, QPS: -1}}
}

func (e *serverEnv) client(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func writeFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

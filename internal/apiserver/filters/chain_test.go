package filters_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// TestFullChain wires every filter in the documented order behind pki's TLS
// and checks each outcome end to end, including that refusals by inner
// filters are visible to the outer metrics.
func TestFullChain(t *testing.T) {
	creds, err := pki.EnsureCredentials(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	metrics, err := filters.WithMetrics(filters.MetricsConfig{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	inflight, err := filters.WithMaxInFlight(filters.MaxInFlightConfig{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	// A stand-in for RBAC: everyone may read the public paths (upstream's
	// system:public-info-viewer), anyone may use pods in namespace "bob",
	// system:masters may do anything.
	az := authz.Union(authz.PrivilegedGroups(request.GroupMasters), authz.AuthorizerFunc(
		func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
			if !a.IsResourceRequest && a.Verb == "get" && (a.Path == "/healthz" || a.Path == "/version") {
				return authz.DecisionAllow, "", nil
			}
			if a.Namespace == "bob" && a.Resource == "pods" {
				return authz.DecisionAllow, "", nil
			}
			return authz.DecisionNoOpinion, "", nil
		}))
	const bobToken = "bob-bob-bob-bob-bob-bob-bob-bob-bob"
	auth := authn.Union(
		authn.NewClientCertAuthenticator(creds.CAPool()),
		authn.BearerToken(authn.NewAdminToken(creds.Token)),
		authn.BearerToken(authn.NewStaticTokens(map[string]*request.User{bobToken: {Name: "bob"}})),
	)

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			filters.WriteStatusError(w, err)
			return
		}
		u, _ := request.UserFrom(r.Context())
		io.WriteString(w, u.Name)
	})
	h := filters.Chain(handler,
		filters.WithPanicRecovery(nil),
		filters.WithRequestInfo,
		metrics,
		filters.WithLogging(nil),
		filters.WithRequestDeadline(0),
		filters.WithBodyLimit(1024),
		authn.WithAuthentication(auth, authn.Config{}),
		inflight,
		authz.WithAuthorization(az, nil),
	)
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = creds.TLSConfig()
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	client.Transport.(*http.Transport).TLSClientConfig.RootCAs = creds.CAPool()

	tests := []struct {
		name, method, path, token, body string
		code                            int
	}{
		{"admin lists nodes", "GET", "/api/v1/nodes", creds.Token, "", 200},
		{"anonymous health check", "GET", "/healthz", "", "", 200},
		{"no credentials", "GET", "/api/v1/nodes", "", "", 401},
		{"traversal", "GET", "/api/v1/namespaces/%2e%2e/pods", creds.Token, "", 400},
		{"body too large", "POST", "/api/v1/namespaces/ns/configmaps", creds.Token, strings.Repeat("x", 2048), 413},
		{"anonymous version", "GET", "/version", "", "", 200},
		{"bob lists his pods", "GET", "/api/v1/namespaces/bob/pods", bobToken, "", 200},
		{"bob lists nodes", "GET", "/api/v1/nodes", bobToken, "", 403},
		{"anonymous cannot read metrics", "GET", "/metrics", "", "", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("code %d, want %d: %s", resp.StatusCode, tt.code, body)
			}
			if resp.ProtoMajor != 2 {
				t.Errorf("served over %s, want HTTP/2", resp.Proto)
			}
		})
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]bool{}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" {
					codes[l.GetValue()] = true
				}
			}
		}
	}
	for _, c := range []string{"200", "401", "403", "413"} {
		if !codes[c] {
			t.Errorf("no apiserver_request_total with code %s; have %v", c, codes)
		}
	}
}

package authn

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/pki"
)

const adminToken = "0123456789abcdef0123456789abcdef-admin"

func TestTokenAuthenticator(t *testing.T) {
	a := Union(
		BearerToken(NewAdminToken(adminToken)),
		BearerToken(NewStaticTokens(map[string]*request.User{"bob-token-xxxxxxxxxxxxxxxxxxxxxxx": {Name: "bob", Groups: []string{"devs"}}})),
	)
	tests := []struct {
		name   string
		header string
		user   string
		groups []string
		err    bool
	}{
		{"admin", "Bearer " + adminToken, request.AdminUser, []string{request.GroupMasters, request.GroupAuthenticated}, false},
		{"scheme in any case", "bearer " + adminToken, request.AdminUser, []string{request.GroupMasters, request.GroupAuthenticated}, false},
		{"second token", "Bearer bob-token-xxxxxxxxxxxxxxxxxxxxxxx", "bob", []string{"devs", request.GroupAuthenticated}, false},
		{"wrong token", "Bearer " + adminToken + "x", "", nil, true},
		{"prefix of token", "Bearer " + adminToken[:10], "", nil, true},
		{"no header", "", "", nil, false},
		{"basic auth", "Basic YWRtaW46YWRtaW4=", "", nil, false},
		{"empty bearer", "Bearer ", "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			u, ok, err := a.AuthenticateRequest(r)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if tt.err && !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("err = %v, want ErrInvalidToken", err)
			}
			if ok != (tt.user != "") {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			if u.Name != tt.user || !slices.Equal(u.Groups, tt.groups) {
				t.Fatalf("user %+v, want %s %v", u, tt.user, tt.groups)
			}
			if r.Header.Get("Authorization") != "" {
				t.Fatal("Authorization header left on an authenticated request")
			}
		})
	}
}

// clientCert issues a certificate for user/groups from creds and parses it.
func clientCert(t *testing.T, creds *pki.Credentials, user string, groups []string, validity time.Duration) tls.Certificate {
	t.Helper()
	certPEM, keyPEM, err := creds.IssueClientCertificate(user, groups, validity)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func TestClientCertAuthenticator(t *testing.T) {
	creds, err := pki.EnsureCredentials(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := pki.EnsureCredentials(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(c tls.Certificate) []*x509.Certificate {
		cert, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return []*x509.Certificate{cert}
	}
	a := NewClientCertAuthenticator(creds.CAPool())

	tests := []struct {
		name   string
		tls    *tls.ConnectionState
		user   string
		groups []string
		err    bool
	}{
		{"node certificate", &tls.ConnectionState{PeerCertificates: leaf(clientCert(t, creds, "system:node:n1", []string{"system:nodes"}, time.Hour))},
			"system:node:n1", []string{"system:nodes", request.GroupAuthenticated}, false},
		{"no groups", &tls.ConnectionState{PeerCertificates: leaf(clientCert(t, creds, "alice", nil, time.Hour))},
			"alice", []string{request.GroupAuthenticated}, false},
		{"foreign CA", &tls.ConnectionState{PeerCertificates: leaf(clientCert(t, foreign, "system:admin", []string{request.GroupMasters}, time.Hour))}, "", nil, true},
		{"serving certificate is not a client certificate", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{creds.ServingCert.Leaf}}, "", nil, true},
		{"TLS without certificate", &tls.ConnectionState{}, "", nil, false},
		{"plain HTTP", nil, "", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			r.TLS = tt.tls
			u, ok, err := a.AuthenticateRequest(r)
			if (err != nil) != tt.err || ok != (tt.user != "") {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if ok && (u.Name != tt.user || !slices.Equal(u.Groups, tt.groups)) {
				t.Fatalf("user %+v, want %s %v", u, tt.user, tt.groups)
			}
		})
	}

	t.Run("expiry ends a cached verification", func(t *testing.T) {
		now := time.Now()
		a := NewClientCertAuthenticator(creds.CAPool())
		a.now = func() time.Time { return now }
		r := httptest.NewRequest("GET", "/", nil)
		r.TLS = &tls.ConnectionState{PeerCertificates: leaf(clientCert(t, creds, "alice", nil, time.Hour))}
		for range 2 { // verified, then served from the cache
			if _, ok, err := a.AuthenticateRequest(r); !ok || err != nil {
				t.Fatalf("fresh certificate refused: ok=%v err=%v", ok, err)
			}
		}
		now = now.Add(2 * time.Hour)
		if _, ok, err := a.AuthenticateRequest(r); ok || err == nil {
			t.Fatalf("expired certificate accepted: ok=%v err=%v", ok, err)
		}
	})
}

// whoami answers with the name of the user on the context.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user", http.StatusInternalServerError)
		return
	}
	io.WriteString(w, u.Name)
})

func TestWithAuthentication(t *testing.T) {
	h := WithAuthentication(BearerToken(NewAdminToken(adminToken)), Config{})(whoami)
	tests := []struct {
		name, path, token string
		code              int
		body              string
	}{
		{"admin", "/api/v1/pods", adminToken, 200, request.AdminUser},
		{"no credentials", "/api/v1/pods", "", 401, ""},
		{"wrong token", "/api/v1/pods", "nope", 401, ""},
		{"anonymous health check", "/healthz", "", 200, request.AnonymousUser},
		{"anonymous readyz", "/readyz", "", 200, request.AnonymousUser},
		{"anonymous livez", "/livez", "", 200, request.AnonymousUser},
		{"anonymous version", "/version", "", 200, request.AnonymousUser},
		{"public path with wrong token", "/healthz", "nope", 401, ""},
		{"public path with good token", "/healthz", adminToken, 200, request.AdminUser},
		{"not a public prefix", "/healthz/etcd", "", 401, ""},
		{"metrics are not public", "/metrics", "", 401, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.path, nil)
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.code {
				t.Fatalf("code %d, want %d (%s)", w.Code, tt.code, w.Body)
			}
			if tt.code == 401 {
				var s metav1.Status
				if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
					t.Fatal(err)
				}
				if s.Kind != "Status" || s.Reason != metav1.StatusReasonUnauthorized || s.Code != 401 || s.Message != "Unauthorized" {
					t.Fatalf("status %+v", s)
				}
				return
			}
			if w.Body.String() != tt.body {
				t.Fatalf("user %q, want %q", w.Body, tt.body)
			}
		})
	}

	t.Run("configured public prefix", func(t *testing.T) {
		h := WithAuthentication(BearerToken(NewAdminToken(adminToken)), Config{PublicPaths: []string{"/openid/*"}})(whoami)
		for path, code := range map[string]int{"/openid/v1/jwks": 200, "/healthz": 401} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
			if w.Code != code {
				t.Errorf("%s: %d, want %d", path, w.Code, code)
			}
		}
	})
}

// TestOverTLS runs the real thing: a server with pki's TLS config and both
// authenticators, reached with a client certificate and with the token.
func TestOverTLS(t *testing.T) {
	creds, err := pki.EnsureCredentials(t.TempDir(), pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	auth := Union(NewClientCertAuthenticator(creds.CAPool()), BearerToken(NewAdminToken(creds.Token)))
	srv := httptest.NewUnstartedServer(WithAuthentication(auth, Config{})(whoami))
	srv.TLS = creds.TLSConfig()
	srv.StartTLS()
	defer srv.Close()

	get := func(cert *tls.Certificate, token string) (int, string) {
		cfg := &tls.Config{RootCAs: creds.CAPool()}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/pods", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	node := clientCert(t, creds, "system:node:n1", []string{"system:nodes"}, time.Hour)
	if code, body := get(&node, ""); code != 200 || body != "system:node:n1" {
		t.Fatalf("client cert: %d %s", code, body)
	}
	if code, body := get(nil, creds.Token); code != 200 || body != request.AdminUser {
		t.Fatalf("token: %d %s", code, body)
	}
	if code, _ := get(nil, ""); code != 401 {
		t.Fatalf("no credentials: %d", code)
	}
}

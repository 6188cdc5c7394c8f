package e2e

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOIDCWithKubectl runs `myriad up` with an AuthenticationConfiguration
// naming a real OIDC issuer (discovery and JWKS over TLS, served by this
// test) and an anonymous section, and uses the issuer's tokens with
// kubectl --token.
func TestOIDCWithKubectl(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	mux := http.NewServeMux()
	issuer := httptest.NewTLSServer(mux)
	defer issuer.Close()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": issuer.URL, "jwks_uri": issuer.URL + "/keys"})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": "k1",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	sign := func(claims map[string]any) string {
		header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": "k1"})
		payload, _ := json.Marshal(claims)
		signing := b64(header) + "." + b64(payload)
		digest := sha256.Sum256([]byte(signing))
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
		if err != nil {
			t.Fatal(err)
		}
		return signing + "." + b64(sig)
	}
	now := time.Now()
	claims := func(exp time.Time) map[string]any {
		return map[string]any{"iss": issuer.URL, "aud": "myriad", "sub": "alice", "groups": []string{"devs"}, "iat": now.Unix(), "exp": exp.Unix()}
	}
	good, expired := sign(claims(now.Add(time.Hour))), sign(claims(now.Add(-time.Hour)))

	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: issuer.Certificate().Raw})
	dir := t.TempDir()
	config := filepath.Join(dir, "authn.yaml")
	policy := filepath.Join(dir, "policy.yaml")
	auditLog := filepath.Join(dir, "audit.log")
	writeFile := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(config, `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: `+issuer.URL+`
    audiences: [myriad]
    certificateAuthority: |
      `+strings.ReplaceAll(strings.TrimSpace(string(ca)), "\n", "\n      ")+`
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: "oidc:"}
anonymous:
  enabled: true
  conditions:
  - path: /livez
`)
	writeFile(policy, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s, err := startCommand("up", filepath.Join(dir, "data"), port, "--scheduler=false", "--controllers=",
		"--authentication-config", config, "--audit-policy-file", policy, "--audit-log-path", auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stopping myriad: %v", err)
		}
	}()

	// oidc:alice may read (RBAC: a role of its own, since view's rules are
	// aggregated by a controller this server does not run).
	s.mustKubectl(t, "", "create", "clusterrole", "read-configmaps", "--verb=list", "--resource=configmaps")
	s.mustKubectl(t, "", "create", "clusterrolebinding", "oidc-alice-read", "--clusterrole=read-configmaps", "--user=oidc:alice")
	// The issuer's keys are fetched in the background after start.
	var out string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if out, err = s.kubectl(t, "", "--token", good, "get", "configmaps", "-n", "oidc-ns"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the issuer's token never worked: %v\n%s\n%s", err, out, s.log.String())
		}
	}
	t.Run("identity", func(t *testing.T) {
		var ev = findEventEventually(t, auditLog, "/api/v1/namespaces/oidc-ns/configmaps")
		if ev.User.Username != "oidc:alice" || strings.Join(ev.User.Groups, ",") != "oidc:devs,system:authenticated" {
			t.Fatalf("user %+v", ev.User)
		}
	})
	t.Run("expired token", func(t *testing.T) {
		if out, err := s.kubectl(t, "", "--token", expired, "get", "configmaps"); err == nil || !strings.Contains(out, "Unauthorized") {
			t.Fatalf("expired token: %v\n%s", err, out)
		}
	})
	t.Run("anonymous only on /livez", func(t *testing.T) {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		for path, code := range map[string]int{"/livez": 200, "/healthz": 401, "/version": 401} {
			resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(port) + path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != code {
				t.Errorf("%s: %d, want %d", path, resp.StatusCode, code)
			}
			if resp.Header.Get("Audit-Id") == "" {
				t.Errorf("%s: no Audit-Id header", path)
			}
		}
	})
}

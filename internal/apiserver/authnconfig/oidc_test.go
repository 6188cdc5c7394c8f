package authnconfig

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// issuer is a real OIDC issuer over TLS: discovery and a JWKS with one
// RSA key, and tokens signed with it by hand (no JOSE library, so the
// verifier is checked against the specs, not against itself).
type issuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	iss := &issuer{key: key, kid: "key-1"}
	mux := http.NewServeMux()
	iss.srv = httptest.NewTLSServer(mux)
	t.Cleanup(iss.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/keys",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]string{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": iss.kid,
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	return iss
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (iss *issuer) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: iss.srv.Certificate().Raw}))
}

// token signs claims with key (the issuer's unless another is given).
func (iss *issuer) token(t *testing.T, claims map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	if key == nil {
		key = iss.key
	}
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": iss.kid})
	payload, _ := json.Marshal(claims)
	signing := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + b64(sig)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n"+prefix)
}

func TestOIDC(t *testing.T) {
	iss := newIssuer(t)
	config := `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: ` + iss.srv.URL + `
    audiences: ["myriad"]
    certificateAuthority: |
` + indent(iss.caPEM(), "      ") + `
  claimValidationRules:
  - expression: 'claims.hd == "example.com"'
    message: the hosted domain must be example.com
  claimMappings:
    username:
      claim: sub
      prefix: "oidc:"
    groups:
      claim: groups
      prefix: "oidc:"
    uid:
      expression: '"uid-" + claims.sub'
    extra:
    - key: example.com/tenant
      valueExpression: claims.tenant
  userValidationRules:
  - expression: "!user.username.startsWith('oidc:system:')"
    message: reserved user name
`
	a, err := Build(context.Background(), Options{AuthenticationConfigFile: writeFile(t, config)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	deadline := time.Now().Add(20 * time.Second)
	for a.HealthCheck() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("issuer keys never fetched: %v", a.HealthCheck())
		}
		time.Sleep(20 * time.Millisecond)
	}

	now := time.Now()
	valid := func(changes map[string]any) map[string]any {
		c := map[string]any{
			"iss": iss.srv.URL, "aud": "myriad", "sub": "alice", "hd": "example.com",
			"groups": []string{"devs", "ops"}, "tenant": "t1",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		for k, v := range changes {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	goodToken := iss.token(t, valid(nil), nil)

	tests := []struct {
		name  string
		token string
		ok    bool
		err   bool
	}{
		{"valid", goodToken, true, false},
		{"expired", iss.token(t, valid(map[string]any{"exp": now.Add(-time.Minute).Unix()}), nil), false, true},
		{"wrong audience", iss.token(t, valid(map[string]any{"aud": "someone-else"}), nil), false, true},
		{"foreign issuer", iss.token(t, valid(map[string]any{"iss": "https://elsewhere.example.com"}), nil), false, false},
		{"signed by another key", iss.token(t, valid(nil), other), false, true},
		{"tampered payload", tamper(goodToken), false, true},
		{"claim validation rule", iss.token(t, valid(map[string]any{"hd": "evil.com"}), nil), false, true},
		{"user validation rule", iss.token(t, valid(map[string]any{"sub": "system:admin"}), nil), false, true},
		{"not a JWT", "abc.def", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, ok, err := a.Tokens.AuthenticateToken(context.Background(), tt.token, nil)
			if ok != tt.ok || (err != nil) != tt.err {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			if !ok {
				return
			}
			u := resp.User
			want := map[string][]string{"example.com/tenant": {"t1"}}
			if u.Name != "oidc:alice" || u.UID != "uid-alice" || strings.Join(u.Groups, ",") != "oidc:devs,oidc:ops" || !reflect.DeepEqual(u.Extra, want) {
				t.Fatalf("user %+v", u)
			}
		})
	}
}

// tamper changes the subject of a signed token without re-signing it.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	payload = []byte(strings.Replace(string(payload), `"sub":"alice"`, `"sub":"admin"`, 1))
	parts[1] = b64(payload)
	return strings.Join(parts, ".")
}

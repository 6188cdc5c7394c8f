package controlplane

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/pki"
)

func TestServiceAccountOptions(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	if _, err := pki.EnsureServiceAccountKey(other); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts ServiceAccountOptions
		err  string
	}{
		{name: "defaults"},
		{name: "max expiration too short", opts: ServiceAccountOptions{MaxTokenExpiration: 30 * time.Minute}, err: "between 1 hour"},
		{name: "key files without the signing key", opts: ServiceAccountOptions{KeyFiles: []string{filepath.Join(other, pki.ServiceAccountPublicKeyFile)}}, err: "does not hold"},
		{name: "key files with it", opts: ServiceAccountOptions{KeyFiles: []string{
			filepath.Join(other, pki.ServiceAccountPublicKeyFile), filepath.Join(dir, pki.ServiceAccountPublicKeyFile)}}},
		{name: "jwks uri not https", opts: ServiceAccountOptions{JWKSURI: "http://keys.example.com/jwks"}, err: "must be an https URL"},
		{name: "jwks uri without host", opts: ServiceAccountOptions{JWKSURI: "https:///jwks"}, err: "must be an https URL"},
		{name: "jwks uri", opts: ServiceAccountOptions{JWKSURI: "https://keys.example.com/jwks"}},
		{name: "missing signing key file", opts: ServiceAccountOptions{SigningKeyFile: filepath.Join(dir, "nope")}, err: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa, err := newServiceAccounts(Config{DataDir: dir, ServiceAccounts: tt.opts})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sa.signer.Issuer() != DefaultServiceAccountIssuer || sa.opts.APIAudiences[0] != DefaultServiceAccountIssuer {
				t.Fatalf("issuer %q audiences %v", sa.signer.Issuer(), sa.opts.APIAudiences)
			}
			if _, err := os.Stat(filepath.Join(dir, pki.ServiceAccountKeyFile)); err != nil {
				t.Fatal("no sa.key in the data dir")
			}
		})
	}
}

// The discovery document points at --service-account-jwks-uri when set,
// else at this server's key set.
func TestServiceAccountDiscoveryJWKSURI(t *testing.T) {
	tests := []struct{ name, jwksURI, want string }{
		{"default", "", "https://10.0.0.1:6443/openid/v1/jwks"},
		{"override", "https://keys.example.com/jwks", "https://keys.example.com/jwks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa, err := newServiceAccounts(Config{DataDir: t.TempDir(), ServiceAccounts: ServiceAccountOptions{
				Issuers: []string{"https://issuer.example.com"}, JWKSURI: tt.jwksURI}})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			sa.installDiscovery(mux, "https://10.0.0.1:6443", slog.New(slog.DiscardHandler))
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/openid-configuration", nil))
			var doc struct {
				Issuer  string `json:"issuer"`
				JWKSURI string `json:"jwks_uri"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatalf("%v: %s", err, rec.Body)
			}
			if doc.JWKSURI != tt.want || doc.Issuer != "https://issuer.example.com" {
				t.Errorf("discovery %+v, want jwks_uri %q", doc, tt.want)
			}
		})
	}
}

package controlplane

import (
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

package etcd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/etcd/etcdtest"
)

// TestTLS: a store configured from --etcd-cafile/--etcd-certfile/
// --etcd-keyfile talks to an etcd that requires client certificates; one
// without a client certificate is refused.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	creds, err := pki.EnsureCredentials(dir, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := creds.IssueClientCertificate("myriad-apiserver", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := filepath.Join(dir, "etcd-client.crt"), filepath.Join(dir, "etcd-client.key")
	if err := os.WriteFile(clientCert, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clientKey, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, pki.CACertFile)
	c := etcdtest.StartTLS(t, 1, etcdtest.TLSFiles{
		CertFile:       filepath.Join(dir, pki.ServingCertFile),
		KeyFile:        filepath.Join(dir, pki.ServingKeyFile),
		CAFile:         ca,
		ClientCertFile: clientCert,
		ClientKeyFile:  clientKey,
	})

	tc, err := TLSConfig(ca, clientCert, clientKey)
	if err != nil {
		t.Fatalf("TLSConfig: %v", err)
	}
	s := newTestStore(t, c, Config{TLS: tc})
	ctx := testContext(t, 30*time.Second)
	rev, err := s.Create(ctx, "/k", []byte("v"))
	if err != nil {
		t.Fatalf("Create over TLS: %v", err)
	}
	if kv, err := s.Get(ctx, "/k"); err != nil || kv.ModRevision != rev {
		t.Fatalf("Get over TLS: %v, %v", kv, err)
	}
	if resp, err := c.Client(t).Get(ctx, s.prefix+"/k"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw client over TLS: %v", err)
	}

	// Trusting the CA but presenting no certificate: etcd refuses.
	noCert, err := TLSConfig(ca, "", "")
	if err != nil {
		t.Fatal(err)
	}
	anon := newTestStore(t, c, Config{TLS: noCert, RequestTimeout: time.Second})
	if _, err := anon.Get(ctx, "/k"); err == nil || errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get without a client certificate: %v, want a refusal", err)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "bad.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, ca, cert, key, want string
	}{
		{"missing CA", filepath.Join(dir, "none.crt"), "", "", "read CA file"},
		{"CA not PEM", notPEM, "", "", "holds no PEM certificate"},
		{"cert without key", "", notPEM, "", "needs both"},
		{"bad key pair", "", notPEM, notPEM, "load client certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := TLSConfig(tc.ca, tc.cert, tc.key)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("TLSConfig = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if cfg, err := TLSConfig("", "", ""); cfg != nil || err != nil {
		t.Fatalf("TLSConfig with no files = %v, %v; want nil, nil", cfg, err)
	}
	ctx := context.Background()
	if _, err := New(ctx, Config{Endpoints: []string{" "}}); err == nil {
		t.Fatal("New with a blank endpoint succeeded")
	}
}

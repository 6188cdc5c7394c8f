package pki

import (
	"bytes"
	"crypto/x509"
	"testing"
)

func TestEnsureFrontProxy(t *testing.T) {
	dir := t.TempDir()
	creds, err := EnsureCredentials(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fp, err := EnsureFrontProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fp.CACert.Equal(creds.CACert) {
		t.Fatal("the front-proxy CA is the cluster CA; it must be its own")
	}
	leaf := fp.Client.Leaf
	if leaf.Subject.CommonName != FrontProxyClientUser {
		t.Errorf("client CN = %q, want %q", leaf.Subject.CommonName, FrontProxyClientUser)
	}
	pool := x509.NewCertPool()
	pool.AddCert(fp.CACert)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate does not verify against the front-proxy CA: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("client certificate verifies against the cluster CA; it must not")
	}
	again, err := EnsureFrontProxy(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.CAPEM, fp.CAPEM) || !bytes.Equal(again.ClientCertPEM, fp.ClientCertPEM) {
		t.Error("a second EnsureFrontProxy replaced the CA or the client certificate")
	}
}

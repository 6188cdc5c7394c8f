package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"testing"
	"time"
)

func TestEnsureKubeletClient(t *testing.T) {
	dir := t.TempDir()
	creds, err := EnsureCredentials(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := creds.EnsureKubeletClient(0)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != KubeletClientUser || len(cert.Subject.Organization) != 0 {
		t.Fatalf("subject %v", cert.Subject)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: creds.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("not a client certificate of the CA: %v", err)
	}
	first, _ := os.ReadFile(certFile)

	// Reused while valid; re-issued when it would expire within renewBefore.
	if _, _, err := creds.EnsureKubeletClient(0); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(certFile); !bytes.Equal(first, again) {
		t.Fatal("a valid certificate was re-issued")
	}
	if _, _, err := creds.EnsureKubeletClient(2 * 365 * 24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if renewed, _ := os.ReadFile(certFile); bytes.Equal(first, renewed) {
		t.Fatal("an expiring certificate was kept")
	}
}

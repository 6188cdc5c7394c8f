package authn

import (
	"crypto/tls"
	"crypto/x509"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// Every kubelet request carries a client certificate; this is its cost.
func BenchmarkClientCertAuthenticator(b *testing.B) {
	creds, err := pki.EnsureCredentials(b.TempDir(), pki.Options{})
	if err != nil {
		b.Fatal(err)
	}
	certPEM, keyPEM, err := creds.IssueClientCertificate("system:node:n1", []string{"system:nodes"}, time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		b.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		b.Fatal(err)
	}
	a := NewClientCertAuthenticator(creds.CAPool())
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := a.AuthenticateRequest(r); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}

package signer

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/pki"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// request describes a CSR to create.
type request struct {
	signer     string
	cn         string
	orgs       []string
	dns        []string
	ips        []net.IP
	usages     []certificatesv1.KeyUsage
	expiration *int32
	conds      []certificatesv1.RequestConditionType
	issued     bool
}

func makeCSR(t *testing.T, r request) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns, IPAddresses: r.ips,
	}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer, Usages: r.usages, ExpirationSeconds: r.expiration,
		},
	}
	for _, c := range r.conds {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
	}
	if r.issued {
		csr.Status.Certificate = []byte("already")
	}
	return csr
}

func ptr[T any](v T) *T { return &v }

var (
	approved    = []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved}
	nodeUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	serveUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
)

func TestSync(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.EnsureCredentials(dir, pki.Options{Now: func() time.Time { return now.Add(-time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	opts := Options{CertFile: filepath.Join(dir, pki.CACertFile), KeyFile: filepath.Join(dir, pki.CAKeyFile), Duration: 30 * 24 * time.Hour}
	client := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	cases := []struct {
		name     string
		req      request
		validity time.Duration // of the issued certificate; 0: none issued
		failed   string        // the Failed condition's message, if any
	}{
		{"client", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", orgs: []string{"dev"}, usages: client, conds: approved}, 30 * 24 * time.Hour, ""},
		{"client one hour", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client, expiration: ptr[int32](3600), conds: approved}, time.Hour + backdate, ""},
		{"client capped", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client, expiration: ptr[int32](1 << 30), conds: approved}, 30 * 24 * time.Hour, ""},
		{"kubelet client", request{signer: certificatesv1.KubeAPIServerClientKubeletSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, usages: nodeUsages, conds: approved}, 30 * 24 * time.Hour, ""},
		{"kubelet serving", request{signer: certificatesv1.KubeletServingSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}, ips: []net.IP{net.IPv4(10, 0, 0, 1)}, usages: serveUsages, conds: approved}, 30 * 24 * time.Hour, ""},
		{"pending", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client}, 0, ""},
		{"denied", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client, conds: []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied}}, 0, ""},
		{"approved and failed", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client, conds: []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateFailed}}, 0, ""},
		{"already issued", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: client, conds: approved, issued: true}, 0, ""},
		{"other signer", request{signer: "example.com/signer", cn: "alice", usages: client, conds: approved}, 0, ""},
		{"client with server usage", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}, conds: approved}, 0, "invalid usage for client certificate: server auth"},
		{"client without client auth", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "alice", usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, conds: approved}, 0, "missing required usage for client certificate: client auth"},
		{"kubelet client wrong group", request{signer: certificatesv1.KubeAPIServerClientKubeletSignerName, cn: "system:node:n1", orgs: []string{"system:masters"}, usages: nodeUsages, conds: approved}, 0, "subject organization is not system:nodes"},
		{"kubelet client wrong name", request{signer: certificatesv1.KubeAPIServerClientKubeletSignerName, cn: "n1", orgs: []string{"system:nodes"}, usages: nodeUsages, conds: approved}, 0, "subject common name does not begin with system:node:"},
		{"kubelet client with SAN", request{signer: certificatesv1.KubeAPIServerClientKubeletSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}, usages: nodeUsages, conds: approved}, 0, "DNS subjectAltNames are not allowed"},
		{"kubelet client server usage", request{signer: certificatesv1.KubeAPIServerClientKubeletSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, usages: serveUsages, conds: approved}, 0, "usages did not match [client auth digital signature key encipherment]"},
		{"kubelet serving no SAN", request{signer: certificatesv1.KubeletServingSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, usages: serveUsages, conds: approved}, 0, "DNS or IP subjectAltName is required"},
		{"kubelet serving client usage", request{signer: certificatesv1.KubeletServingSignerName, cn: "system:node:n1", orgs: []string{"system:nodes"}, dns: []string{"n1"}, usages: nodeUsages, conds: approved}, 0, "usages did not match [digital signature key encipherment server auth]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := makeCSR(t, tc.req)
			cs := fake.NewClientset(csr)
			f := informers.NewSharedInformerFactory(cs, 0)
			clk := clocktesting.NewFakeClock(now)
			c, err := New(&controllerctx.Context{Client: cs, Informers: f, Clock: clk, Logger: slog.Default()}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.ShutDown()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f.Start(ctx.Done())
			defer f.Shutdown()
			defer cancel() // before Shutdown, which waits for the informers
			f.WaitForCacheSync(ctx.Done())
			if err := c.sync(ctx, "csr"); err != nil {
				t.Fatalf("sync: %v", err)
			}
			got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var failed string
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateFailed && cond.Reason == "SignerValidationFailure" {
					failed = cond.Message
				}
			}
			if failed != tc.failed {
				t.Errorf("Failed message %q, want %q", failed, tc.failed)
			}
			if tc.validity == 0 {
				if string(got.Status.Certificate) != string(csr.Status.Certificate) {
					t.Errorf("issued a certificate")
				}
				return
			}
			cert := parseIssued(t, got.Status.Certificate)
			if err := cert.CheckSignatureFrom(c.issuer.ca); err != nil {
				t.Errorf("not signed by the CA: %v", err)
			}
			if cert.Subject.CommonName != tc.req.cn || strings.Join(cert.Subject.Organization, ",") != strings.Join(tc.req.orgs, ",") {
				t.Errorf("subject %v", cert.Subject)
			}
			if cert.IsCA || len(cert.DNSNames) != len(tc.req.dns) || len(cert.IPAddresses) != len(tc.req.ips) {
				t.Errorf("IsCA %v, SANs %v %v", cert.IsCA, cert.DNSNames, cert.IPAddresses)
			}
			if d := cert.NotAfter.Sub(cert.NotBefore); d != tc.validity {
				t.Errorf("validity %v, want %v", d, tc.validity)
			}
			if !cert.NotBefore.Equal(now.Add(-backdate)) {
				t.Errorf("NotBefore %v, want %v", cert.NotBefore, now.Add(-backdate))
			}
		})
	}
}

func parseIssued(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		t.Fatalf("certificate %q is not PEM", data)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestDuration(t *testing.T) {
	s := &issuer{maxDuration: 24 * time.Hour}
	cases := []struct {
		req  *int32
		want time.Duration
	}{
		{nil, 24 * time.Hour},
		{ptr[int32](3600), time.Hour},
		{ptr[int32](60), minDuration},
		{ptr[int32](7 * 86400), 24 * time.Hour},
	}
	for _, tc := range cases {
		if got := s.duration(tc.req); got != tc.want {
			t.Errorf("duration(%v) = %v, want %v", tc.req, got, tc.want)
		}
	}
}

func TestKeyUsages(t *testing.T) {
	ku, eku, err := keyUsages([]certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth})
	if err != nil {
		t.Fatal(err)
	}
	if ku != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || len(eku) != 2 || eku[0] != x509.ExtKeyUsageServerAuth || eku[1] != x509.ExtKeyUsageClientAuth {
		t.Errorf("usages %v %v", ku, eku)
	}
	if _, _, err := keyUsages([]certificatesv1.KeyUsage{"flying"}); err == nil {
		t.Error("unknown usage accepted")
	}
}

func TestNewNeedsCA(t *testing.T) {
	cs := fake.NewClientset()
	cc := &controllerctx.Context{Client: cs, Informers: informers.NewSharedInformerFactory(cs, 0), Logger: slog.Default()}
	if _, err := New(cc, Options{}); err == nil {
		t.Error("New accepted no CA")
	}
	if _, err := New(cc, Options{CertFile: "/nonexistent/ca.crt", KeyFile: "/nonexistent/ca.key"}); err == nil {
		t.Error("New accepted missing files")
	}
}

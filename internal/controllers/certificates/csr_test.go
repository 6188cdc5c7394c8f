package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
)

func parsed(t *testing.T, tmpl *x509.CertificateRequest) *x509.CertificateRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	req, err := ParseRequest(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestValidateForSigner(t *testing.T) {
	const (
		ds       = certificatesv1.UsageDigitalSignature
		ke       = certificatesv1.UsageKeyEncipherment
		ca       = certificatesv1.UsageClientAuth
		sa       = certificatesv1.UsageServerAuth
		anyUsage = certificatesv1.UsageAny
	)
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	u, _ := url.Parse("spiffe://x")
	cases := []struct {
		name   string
		signer string
		req    x509.CertificateRequest
		usages []certificatesv1.KeyUsage
		known  bool
		err    string
	}{
		{"client", certificatesv1.KubeAPIServerClientSignerName, x509.CertificateRequest{Subject: pkix.Name{CommonName: "a"}}, []certificatesv1.KeyUsage{ca}, true, ""},
		{"client all allowed", certificatesv1.KubeAPIServerClientSignerName, x509.CertificateRequest{}, []certificatesv1.KeyUsage{ds, ke, ca}, true, ""},
		{"client any", certificatesv1.KubeAPIServerClientSignerName, x509.CertificateRequest{}, []certificatesv1.KeyUsage{ca, anyUsage}, true, "invalid usage for client certificate: any"},
		{"client none", certificatesv1.KubeAPIServerClientSignerName, x509.CertificateRequest{}, []certificatesv1.KeyUsage{ds}, true, "missing required usage for client certificate: client auth"},
		{"kubelet client", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ds, ke, ca}, true, ""},
		{"kubelet client no RSA", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ca, ds}, true, ""},
		{"kubelet client missing signature", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node}, []certificatesv1.KeyUsage{ca}, true, "usages did not match [client auth digital signature key encipherment]"},
		{"kubelet client two groups", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes", "x"}}}, []certificatesv1.KeyUsage{ds, ca}, true, ErrOrganizationNotNodes.Error()},
		{"kubelet client IP", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node, IPAddresses: []net.IP{net.IPv4(1, 2, 3, 4)}}, []certificatesv1.KeyUsage{ds, ca}, true, ErrIPSANNotAllowed.Error()},
		{"kubelet client email", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node, EmailAddresses: []string{"a@b.c"}}, []certificatesv1.KeyUsage{ds, ca}, true, ErrEmailSANNotAllowed.Error()},
		{"kubelet client URI", certificatesv1.KubeAPIServerClientKubeletSignerName, x509.CertificateRequest{Subject: node, URIs: []*url.URL{u}}, []certificatesv1.KeyUsage{ds, ca}, true, ErrURISANNotAllowed.Error()},
		{"kubelet serving", certificatesv1.KubeletServingSignerName, x509.CertificateRequest{Subject: node, IPAddresses: []net.IP{net.IPv4(1, 2, 3, 4)}}, []certificatesv1.KeyUsage{ds, sa}, true, ""},
		{"kubelet serving URI", certificatesv1.KubeletServingSignerName, x509.CertificateRequest{Subject: node, DNSNames: []string{"n1"}, URIs: []*url.URL{u}}, []certificatesv1.KeyUsage{ds, sa}, true, ErrURISANNotAllowed.Error()},
		{"kubelet serving not a node", certificatesv1.KubeletServingSignerName, x509.CertificateRequest{Subject: pkix.Name{CommonName: "n1", Organization: []string{"system:nodes"}}, DNSNames: []string{"n1"}}, []certificatesv1.KeyUsage{ds, sa}, true, ErrCommonNameNotNode.Error()},
		{"other signer", "example.com/x", x509.CertificateRequest{}, nil, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			known, err := ValidateForSigner(tc.signer, parsed(t, &tc.req), tc.usages)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if known != tc.known || got != tc.err {
				t.Errorf("ValidateForSigner = %v, %q; want %v, %q", known, got, tc.known, tc.err)
			}
		})
	}
}

func TestApprovalState(t *testing.T) {
	with := func(ts ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		csr := &certificatesv1.CertificateSigningRequest{}
		for _, ct := range ts {
			csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: ct, Status: corev1.ConditionTrue})
		}
		return csr
	}
	cases := []struct {
		name                         string
		csr                          *certificatesv1.CertificateSigningRequest
		approved, denied, isApproved bool
	}{
		{"pending", with(), false, false, false},
		{"approved", with(certificatesv1.CertificateApproved), true, false, true},
		{"denied", with(certificatesv1.CertificateDenied), false, true, false},
		{"both", with(certificatesv1.CertificateApproved, certificatesv1.CertificateDenied), true, true, false},
	}
	for _, tc := range cases {
		a, d := ApprovalState(tc.csr)
		if a != tc.approved || d != tc.denied || IsApproved(tc.csr) != tc.isApproved {
			t.Errorf("%s: ApprovalState = %v, %v; IsApproved %v", tc.name, a, d, IsApproved(tc.csr))
		}
	}
	if !HasTrueCondition(with(certificatesv1.CertificateFailed), certificatesv1.CertificateFailed) || HasTrueCondition(with(), certificatesv1.CertificateFailed) {
		t.Error("HasTrueCondition")
	}
	if _, err := ParseRequest([]byte("junk")); err == nil {
		t.Error("ParseRequest accepted junk")
	}
}

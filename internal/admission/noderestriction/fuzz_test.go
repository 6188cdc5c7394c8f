package noderestriction

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func csrPEM(tb testing.TB, cn string) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn}}, key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// FuzzAdmitCSR: whatever a node sends as a CSR, the plugin answers 403 or
// admits it, and admits a kubelet-signer CSR only in the node's own name.
func FuzzAdmitCSR(f *testing.F) {
	f.Add(csrPEM(f, "system:node:a"), certificatesv1.KubeAPIServerClientKubeletSignerName)
	f.Add(csrPEM(f, "system:node:b"), certificatesv1.KubeletServingSignerName)
	f.Add([]byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), certificatesv1.KubeletServingSignerName)
	f.Add([]byte{}, "example.com/signer")
	f.Fuzz(func(t *testing.T, request []byte, signer string) {
		a := &admission.Attributes{Operation: admission.Create, Resource: certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), User: nodeUser("a"),
			Object: &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: request}}}
		err := admitCSR("a", a)
		if err != nil && !apierrors.IsForbidden(err) {
			t.Fatalf("not a 403: %v", err)
		}
		if err != nil || (signer != certificatesv1.KubeletServingSignerName && signer != certificatesv1.KubeAPIServerClientKubeletSignerName) {
			return
		}
		block, _ := pem.Decode(request)
		req, perr := x509.ParseCertificateRequest(block.Bytes)
		if perr != nil || req.Subject.CommonName != "system:node:a" {
			t.Fatalf("admitted a kubelet CSR not for system:node:a")
		}
	})
}

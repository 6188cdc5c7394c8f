package certsubject

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func request(t *testing.T, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x", Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestValidate(t *testing.T) {
	csrAttrs := func(signer string, req []byte, sub string) *admission.Attributes {
		return &admission.Attributes{
			Operation: admission.Create, Resource: csrResource, Subresource: sub, Name: "x",
			Object: &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: req}},
		}
	}
	cases := []struct {
		name  string
		attrs *admission.Attributes
		want  string // part of the Forbidden message; "" for allowed
	}{
		{"client cert", csrAttrs(certificatesv1.KubeAPIServerClientSignerName, request(t, "dev"), ""), ""},
		{"masters", csrAttrs(certificatesv1.KubeAPIServerClientSignerName, request(t, "dev", "system:masters"), ""), "use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed"},
		{"masters for another signer", csrAttrs(certificatesv1.KubeAPIServerClientKubeletSignerName, request(t, "system:masters"), ""), ""},
		{"masters through a subresource", csrAttrs(certificatesv1.KubeAPIServerClientSignerName, request(t, "system:masters"), "status"), ""},
		{"unparsable", csrAttrs(certificatesv1.KubeAPIServerClientSignerName, []byte("junk"), ""), "failed to parse CSR"},
		{"other resource", &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Pod{}}, ""},
	}
	p := New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), tc.attrs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want Forbidden with %q", err, tc.want)
			}
		})
	}
	if p.Handles(admission.Update) || !p.Handles(admission.Create) {
		t.Error("the plugin handles creates only")
	}
}

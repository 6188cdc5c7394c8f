package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// TestCSRSubresources drives a CertificateSigningRequest through the
// server: the requestor is the authenticated user, approval writes only
// the approval conditions, status only the certificate, and the object
// itself neither.
func TestCSRSubresources(t *testing.T) {
	alice := &request.User{Name: "alice", UID: "u-1", Groups: []string{"dev", request.GroupAuthenticated}}
	e := newEnv(t, withHandler(func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), alice)))
		})
	}))
	ctx := context.Background()
	csrs := e.cs.CertificatesV1().CertificateSigningRequests()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := csrs.Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
			Username:   "system:admin",
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if csr.Spec.Username != "alice" || csr.Spec.UID != "u-1" || len(csr.Spec.Groups) != 2 {
		t.Fatalf("requestor %q %q %v, want the authenticated user", csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups)
	}

	// Approving and denying at once is refused with upstream's field path.
	both := csr.DeepCopy()
	both.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{
		{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue},
		{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue},
	}
	_, err = csrs.UpdateApproval(ctx, csr.Name, both, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("approve and deny: %v, want Invalid", err)
	}
	if st := err.(apierrors.APIStatus).Status(); st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "status.conditions[1].type" {
		t.Errorf("approve and deny causes: %+v", st.Details)
	}

	// Conditions cannot be added through status or the object.
	approved := csr.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test"}}
	if _, err := csrs.UpdateStatus(ctx, approved, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("approval through status: %v, want Invalid", err)
	}
	if out, err := csrs.Update(ctx, approved, metav1.UpdateOptions{}); err != nil || len(out.Status.Conditions) != 0 {
		t.Errorf("approval through the object: %v, conditions %v", err, out.Status.Conditions)
	}
	csr, err = csrs.UpdateApproval(ctx, csr.Name, approved, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csr.Status.Conditions) != 1 || csr.Status.Conditions[0].LastUpdateTime.IsZero() {
		t.Fatalf("after approval: %+v", csr.Status.Conditions)
	}

	// The certificate goes through status only, once.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	issued := csr.DeepCopy()
	issued.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
	if out, err := csrs.UpdateApproval(ctx, csr.Name, issued, metav1.UpdateOptions{}); err != nil || len(out.Status.Certificate) != 0 {
		t.Errorf("certificate through approval: %v, stored %d bytes", err, len(out.Status.Certificate))
	}
	issued.ResourceVersion = ""
	csr, err = csrs.UpdateStatus(ctx, issued, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(csr.Status.Certificate) == 0 || len(csr.Status.Conditions) != 1 {
		t.Fatalf("after status: %+v", csr.Status)
	}
	csr.Status.Certificate = []byte("junk")
	if _, err := csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("replacing the certificate: %v, want Invalid", err)
	}

	// The field selector on spec.signerName.
	for signer, want := range map[string]int{certificatesv1.KubeAPIServerClientSignerName: 1, certificatesv1.KubeletServingSignerName: 0} {
		l, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + signer})
		if err != nil || len(l.Items) != want {
			t.Errorf("list spec.signerName=%s: %v, %d items, want %d", signer, err, len(l.Items), want)
		}
	}

	// Discovery names both subresources.
	rl, err := e.cs.Discovery().ServerResourcesForGroupVersion("certificates.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range rl.APIResources {
		names[r.Name] = true
	}
	for _, n := range []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"} {
		if !names[n] {
			t.Errorf("discovery lacks %s: %v", n, names)
		}
	}
}

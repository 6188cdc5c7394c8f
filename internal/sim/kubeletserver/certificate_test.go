package kubeletserver

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeWithNames is a fake clientset that fills in generateName, as the API
// server does.
func fakeWithNames() *fake.Clientset {
	c := fake.NewClientset()
	var n atomic.Int64
	c.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		if obj.Name == "" {
			obj.Name = obj.GenerateName + string(rune('a'+n.Add(1)))
		}
		return false, nil, nil
	})
	return c
}

// The end-to-end test (test/e2e TestSimKubeletAPI) covers issuance by
// Myriad's signer; these are the ways it can fail.
func TestServingCertificateNotIssued(t *testing.T) {
	req := CertificateRequest{NodeName: "hollow-node-0", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Timeout: 300 * time.Millisecond}
	t.Run("no signer", func(t *testing.T) {
		c := fakeWithNames()
		_, err := ServingCertificate(context.Background(), c, req)
		if !errors.Is(err, ErrCertificateNotIssued) || !strings.Contains(err.Error(), "approved: true") || !strings.Contains(err.Error(), "signer running") {
			t.Fatalf("err = %v; want ErrCertificateNotIssued naming the missing signer", err)
		}
		csrs, _ := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
		if len(csrs.Items) != 1 {
			t.Fatalf("%d CSRs", len(csrs.Items))
		}
		csr := csrs.Items[0]
		if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName || len(csr.Spec.Usages) != 2 {
			t.Errorf("CSR spec %+v", csr.Spec)
		}
	})
	t.Run("denied", func(t *testing.T) {
		c := fakeWithNames()
		c.PrependReactor("get", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, &certificatesv1.CertificateSigningRequest{
				ObjectMeta: metav1.ObjectMeta{Name: a.(k8stesting.GetAction).GetName()},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
					{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "Policy"},
				}},
			}, nil
		})
		start := time.Now()
		_, err := ServingCertificate(context.Background(), c, req)
		if !errors.Is(err, ErrCertificateNotIssued) || !strings.Contains(err.Error(), "Denied") || time.Since(start) > 250*time.Millisecond {
			t.Fatalf("err = %v after %v; want an immediate denial", err, time.Since(start))
		}
	})
	t.Run("no SANs", func(t *testing.T) {
		if _, err := ServingCertificate(context.Background(), fakeWithNames(), CertificateRequest{NodeName: "n"}); err == nil {
			t.Fatal("accepted a request without SANs")
		}
	})
}

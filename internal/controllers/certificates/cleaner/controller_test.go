package cleaner

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func certExpiring(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: notAfter.Add(-48 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// csr is a request created at created with a condition of type ct (none
// if empty) last updated at updated, and cert as its certificate.
func csr(name string, created time.Time, ct certificatesv1.RequestConditionType, updated time.Time, cert []byte) *certificatesv1.CertificateSigningRequest {
	c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
	if ct != "" {
		c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: ct, Status: corev1.ConditionTrue, LastUpdateTime: metav1.NewTime(updated)}}
	}
	c.Status.Certificate = cert
	return c
}

func TestExpired(t *testing.T) {
	valid := certExpiring(t, now.Add(24*time.Hour))
	old := certExpiring(t, now.Add(-time.Minute))
	const (
		approved = certificatesv1.CertificateApproved
		denied   = certificatesv1.CertificateDenied
		failed   = certificatesv1.CertificateFailed
	)
	cases := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want bool
	}{
		{"pending a day and a minute", csr("a", now.Add(-24*time.Hour-time.Minute), "", time.Time{}, nil), true},
		{"pending 23 hours", csr("a", now.Add(-23*time.Hour), "", time.Time{}, nil), false},
		{"issued 61 minutes ago", csr("a", now.Add(-2*time.Hour), approved, now.Add(-61*time.Minute), valid), true},
		{"issued 59 minutes ago", csr("a", now.Add(-2*time.Hour), approved, now.Add(-59*time.Minute), valid), false},
		// Approved but not issued: upstream keeps it (the signer may be
		// down, or another signer's) until the pending rule cannot apply.
		{"approved 2 hours ago, not issued", csr("a", now.Add(-48*time.Hour), approved, now.Add(-2*time.Hour), nil), false},
		{"issued certificate expired", csr("a", now.Add(-2*time.Hour), approved, now.Add(-time.Minute), old), true},
		{"denied 61 minutes ago", csr("a", now.Add(-2*time.Hour), denied, now.Add(-61*time.Minute), nil), true},
		{"denied 59 minutes ago", csr("a", now.Add(-2*time.Hour), denied, now.Add(-59*time.Minute), nil), false},
		{"failed 61 minutes ago", csr("a", now.Add(-2*time.Hour), failed, now.Add(-61*time.Minute), nil), true},
		{"failed just now", csr("a", now.Add(-2*time.Hour), failed, now, nil), false},
		{"condition without timestamp", csr("a", now.Add(-48*time.Hour), denied, time.Time{}, nil), false},
		{"unparsable certificate", csr("a", now.Add(-2*time.Hour), approved, now.Add(-time.Minute), []byte("junk")), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why, got := expired(tc.csr, now)
			if got != tc.want {
				t.Errorf("expired = %v (%s), want %v", got, why, tc.want)
			}
		})
	}
}

// TestRunCleansPeriodically: a pass at start deletes what is due, and the
// next, an hour later on the injected clock, what has come due since.
func TestRunCleansPeriodically(t *testing.T) {
	objs := []runtime.Object{
		csr("stale", now.Add(-25*time.Hour), "", time.Time{}, nil),
		csr("denied", now.Add(-time.Hour), certificatesv1.CertificateDenied, now.Add(-30*time.Minute), nil),
		csr("fresh", now.Add(-time.Minute), "", time.Time{}, nil),
	}
	cs := fake.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(cs, 0)
	clk := clocktesting.NewFakeClock(now)
	c, err := New(&controllerctx.Context{Client: cs, Informers: f, Clock: clk, Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx, 1) }()
	defer func() { cancel(); wg.Wait(); f.Shutdown() }()

	names := func() map[string]bool {
		l, err := cs.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, x := range l.Items {
			m[x.Name] = true
		}
		return m
	}
	waitFor := func(what string, cond func(map[string]bool) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !cond(names()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; have %v", what, names())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitFor("the stale request to go", func(m map[string]bool) bool { return !m["stale"] })
	// The first pass is done once Run waits on its ticker.
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	if m := names(); !m["denied"] || !m["fresh"] {
		t.Fatalf("first pass deleted too much: %v", m)
	}
	clk.Step(pollInterval)
	waitFor("the denied request to go", func(m map[string]bool) bool { return !m["denied"] })
	if m := names(); !m["fresh"] {
		t.Fatalf("second pass deleted the fresh request: %v", m)
	}
}

package servingapprover

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"log/slog"
	"net"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

type request struct {
	signer string
	cn     string
	orgs   []string
	user   string
	groups []string
	dns    []string
	ips    []string
	usages []certificatesv1.KeyUsage
	conds  []certificatesv1.RequestConditionType
}

func makeCSR(t *testing.T, r request) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns}
	for _, ip := range r.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.signer == "" {
		r.signer = certificatesv1.KubeletServingSignerName
	}
	if r.usages == nil {
		r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer, Usages: r.usages, Username: r.user, Groups: r.groups,
		},
	}
	for _, c := range r.conds {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return csr
}

func TestSync(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "10.0.0.1"},
		{Type: corev1.NodeExternalIP, Address: "2001:db8::1"},
		{Type: corev1.NodeHostName, Address: "N1.example.com"},
		{Type: corev1.NodeInternalDNS, Address: "n1.internal"},
	}}}
	nodes := []string{"system:nodes", "system:authenticated"}
	o := []string{"system:nodes"}
	serving := func(dns []string, ips ...string) request {
		return request{cn: "system:node:n1", orgs: o, user: "system:node:n1", groups: nodes, dns: dns, ips: ips}
	}
	with := func(r request, f func(*request)) request { f(&r); return r }
	cases := []struct {
		name     string
		req      request
		approved bool
		requeue  bool
	}{
		{"own IP", serving(nil, "10.0.0.1"), true, false},
		{"own names and IPs", serving([]string{"n1", "n1.example.com", "n1.internal"}, "10.0.0.1", "2001:db8::1"), true, false},
		{"foreign IP", serving(nil, "10.0.0.1", "10.0.0.2"), false, true},
		{"foreign name", serving([]string{"n2"}, "10.0.0.1"), false, true},
		{"another node asks", with(serving(nil, "10.0.0.1"), func(r *request) { r.user = "system:node:n2" }), false, false},
		{"not in system:nodes", with(serving(nil, "10.0.0.1"), func(r *request) { r.groups = []string{"system:authenticated"} }), false, false},
		{"a bootstrap token asks", with(serving(nil, "10.0.0.1"), func(r *request) {
			r.user, r.groups = "system:bootstrap:abcdef", []string{"system:bootstrappers"}
		}), false, false},
		{"wrong organization", with(serving(nil, "10.0.0.1"), func(r *request) { r.orgs = []string{"system:masters"} }), false, false},
		{"client usage", with(serving(nil, "10.0.0.1"), func(r *request) {
			r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		}), false, false},
		{"no SANs", serving(nil), false, false},
		{"unknown node", with(serving(nil, "10.0.0.1"), func(r *request) { r.cn, r.user = "system:node:n9", "system:node:n9" }), false, true},
		{"client signer", with(serving(nil, "10.0.0.1"), func(r *request) { r.signer = certificatesv1.KubeAPIServerClientKubeletSignerName }), false, false},
		{"already denied", with(serving(nil, "10.0.0.1"), func(r *request) { r.conds = []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied} }), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := makeCSR(t, tc.req)
			cs := fake.NewClientset([]runtime.Object{csr, node}...)
			f := informers.NewSharedInformerFactory(cs, 0)
			c, err := New(&controllerctx.Context{Client: cs, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
			if err != nil {
				t.Fatal(err)
			}
			defer c.ShutDown()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			f.Start(ctx.Done())
			defer f.Shutdown()
			defer cancel()
			f.WaitForCacheSync(ctx.Done())
			err = c.sync(ctx, "csr")
			switch {
			case tc.requeue && !errors.Is(err, reconcile.ErrRequeue):
				t.Errorf("sync: %v, want a quiet requeue", err)
			case !tc.requeue && err != nil:
				t.Fatalf("sync: %v", err)
			}
			got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			approved := false
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved && cond.Reason == "AutoApproved" && cond.Message == approvalMessage {
					approved = true
				}
			}
			if approved != tc.approved {
				t.Errorf("approved = %v, want %v (conditions %+v)", approved, tc.approved, got.Status.Conditions)
			}
		})
	}
}

// TestNodeChanges: a request for an address the node does not report yet
// is approved once the node reports it, and one made before its Node
// existed once the Node appears.
func TestNodeChanges(t *testing.T) {
	early := makeCSR(t, request{cn: "system:node:n2", orgs: []string{"system:nodes"}, user: "system:node:n2", groups: []string{"system:nodes"}, ips: []string{"10.0.0.2"}})
	early.Name = "early"
	moved := makeCSR(t, request{cn: "system:node:n1", orgs: []string{"system:nodes"}, user: "system:node:n1", groups: []string{"system:nodes"}, ips: []string{"10.0.0.9"}})
	moved.Name = "moved"
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}}}}
	cs := fake.NewClientset([]runtime.Object{early, moved, n1}...)
	f := informers.NewSharedInformerFactory(cs, 0)
	c, err := New(&controllerctx.Context{Client: cs, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.Start(ctx.Done())
	defer f.Shutdown()
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 1) }()
	defer func() { cancel(); <-done }()

	approved := func(name string) bool {
		got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) == 1 && got.Status.Conditions[0].Type == certificatesv1.CertificateApproved
	}
	waitApproved := func(name string) {
		t.Helper()
		for !approved(name) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s not approved", name)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	if approved("early") || approved("moved") {
		t.Fatal("approved before the node reported the addresses")
	}
	n1 = n1.DeepCopy()
	n1.Status.Addresses = append(n1.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.9"})
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApproved("moved")
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.2"}}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, n2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitApproved("early")
}

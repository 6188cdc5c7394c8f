package approver

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
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

type request struct {
	signer   string
	cn       string
	orgs     []string
	user     string
	groups   []string
	usages   []certificatesv1.KeyUsage
	conds    []certificatesv1.RequestConditionType
	issued   bool
	badPEM   bool
	withSANs bool
}

func makeCSR(t *testing.T, r request) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}}
	if r.withSANs {
		tmpl.DNSNames = []string{"n1"}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.signer == "" {
		r.signer = certificatesv1.KubeAPIServerClientKubeletSignerName
	}
	if r.usages == nil {
		r.usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.signer, Usages: r.usages, Username: r.user, Groups: r.groups,
		},
	}
	if r.badPEM {
		csr.Spec.Request = []byte("junk")
	}
	for _, c := range r.conds {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
	}
	if r.issued {
		csr.Status.Certificate = []byte("x")
	}
	return csr
}

type failingAuthorizer struct{}

func (failingAuthorizer) Authorize(context.Context, *certificatesv1.CertificateSigningRequestSpec, string) (bool, error) {
	return false, errors.New("authorizer down")
}

func TestSync(t *testing.T) {
	nodes := []string{"system:nodes", "system:authenticated"}
	bootstrappers := []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"}
	node := []string{"system:nodes"}
	const (
		self     = "Auto approving self kubelet client certificate after SubjectAccessReview."
		nodeMsg  = "Auto approving kubelet client certificate after SubjectAccessReview."
		approved = certificatesv1.CertificateApproved
	)
	cases := []struct {
		name    string
		req     request
		auth    Authorizer
		message string // of the AutoApproved condition; "" means not approved
		requeue bool
		fails   bool
	}{
		{"node renews itself", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes}, nil, self, false, false},
		{"bootstrap token", request{cn: "system:node:n1", orgs: node, user: "system:bootstrap:abcdef", groups: bootstrappers}, nil, nodeMsg, false, false},
		{"another node", request{cn: "system:node:n1", orgs: node, user: "system:node:n2", groups: nodes}, nil, nodeMsg, false, false},
		{"without key encipherment", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes, usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}, nil, self, false, false},
		{"ordinary user", request{cn: "system:node:n1", orgs: node, user: "alice", groups: []string{"dev", "system:authenticated"}}, nil, "", true, false},
		{"node named by the user only", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: []string{"system:authenticated"}}, nil, "", true, false},
		{"apiserver-client signer", request{signer: certificatesv1.KubeAPIServerClientSignerName, cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes}, nil, "", false, false},
		{"serving signer", request{signer: certificatesv1.KubeletServingSignerName, cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes}, nil, "", false, false},
		{"masters group", request{cn: "system:node:n1", orgs: []string{"system:masters"}, user: "system:bootstrap:abcdef", groups: bootstrappers}, nil, "", false, false},
		{"not a node name", request{cn: "n1", orgs: node, user: "system:bootstrap:abcdef", groups: bootstrappers}, nil, "", false, false},
		{"with SANs", request{cn: "system:node:n1", orgs: node, user: "system:bootstrap:abcdef", groups: bootstrappers, withSANs: true}, nil, "", false, false},
		{"server usage", request{cn: "system:node:n1", orgs: node, user: "system:bootstrap:abcdef", groups: bootstrappers, usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}}, nil, "", false, false},
		{"already approved", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes, conds: []certificatesv1.RequestConditionType{approved}}, nil, "", false, false},
		{"denied", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes, conds: []certificatesv1.RequestConditionType{certificatesv1.CertificateDenied}}, nil, "", false, false},
		{"issued", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes, issued: true}, nil, "", false, false},
		{"unparsable", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes, badPEM: true}, nil, "", false, true},
		{"authorizer error", request{cn: "system:node:n1", orgs: node, user: "system:node:n1", groups: nodes}, failingAuthorizer{}, "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := makeCSR(t, tc.req)
			cs := fake.NewClientset(csr)
			f := informers.NewSharedInformerFactory(cs, 0)
			auth := tc.auth
			if auth == nil {
				auth = GroupAuthorizer{}
			}
			c, err := New(&controllerctx.Context{Client: cs, Informers: f, Clock: clock.RealClock{}, Logger: slog.Default()}, auth)
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
			case tc.requeue:
				if !errors.Is(err, reconcile.ErrRequeue) {
					t.Errorf("sync: %v, want a quiet requeue", err)
				}
			case tc.fails:
				if err == nil || errors.Is(err, reconcile.ErrRequeue) {
					t.Errorf("sync: %v, want an error", err)
				}
			case err != nil:
				t.Fatalf("sync: %v", err)
			}
			got, err := cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var message string
			for _, cond := range got.Status.Conditions {
				if cond.Type == approved && cond.Reason == "AutoApproved" {
					message = cond.Message
				}
			}
			if message != tc.message {
				t.Errorf("approval %q, want %q", message, tc.message)
			}
		})
	}
}

func TestGroupAuthorizer(t *testing.T) {
	cases := []struct {
		groups      []string
		subresource string
		want        bool
	}{
		{[]string{"system:bootstrappers"}, NodeClient, true},
		{[]string{"system:nodes"}, NodeClient, true},
		{[]string{"system:nodes"}, SelfNodeClient, true},
		{[]string{"system:bootstrappers"}, SelfNodeClient, false},
		{[]string{"system:masters"}, NodeClient, false},
		{[]string{"system:nodes"}, "other", false},
		{nil, NodeClient, false},
	}
	for _, tc := range cases {
		got, err := GroupAuthorizer{}.Authorize(context.Background(), &certificatesv1.CertificateSigningRequestSpec{Groups: tc.groups}, tc.subresource)
		if err != nil || got != tc.want {
			t.Errorf("Authorize(%v, %s) = %v, %v; want %v", tc.groups, tc.subresource, got, err, tc.want)
		}
	}
}

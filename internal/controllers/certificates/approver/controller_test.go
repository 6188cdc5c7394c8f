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
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
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
		{"another node", request{cn: "system:node:n1", orgs: node, user: "system:node:n2", groups: nodes}, nil, "", true, false},
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
			cs.PrependReactor("create", "subjectaccessreviews", defaultPolicy)
			f := informers.NewSharedInformerFactory(cs, 0)
			auth := tc.auth
			if auth == nil {
				auth = SubjectAccessReviewer{Client: cs}
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

// defaultPolicy answers SubjectAccessReviews for CSR subresources as the
// default RBAC policy's node bootstrap bindings do: nodeclient for
// system:bootstrappers, selfnodeclient for system:nodes. (The real
// authorizer answers them in test/e2e's TestNodeBootstrap.)
func defaultPolicy(action k8stesting.Action) (bool, runtime.Object, error) {
	sar := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
	ra := sar.Spec.ResourceAttributes
	if ra == nil || ra.Group != "certificates.k8s.io" || ra.Resource != "certificatesigningrequests" || ra.Verb != "create" {
		return true, nil, fmt.Errorf("unexpected review %+v", sar.Spec)
	}
	switch ra.Subresource {
	case NodeClient:
		sar.Status.Allowed = slices.Contains(sar.Spec.Groups, "system:bootstrappers")
	case SelfNodeClient:
		sar.Status.Allowed = slices.Contains(sar.Spec.Groups, "system:nodes")
	}
	return true, sar, nil
}

// TestSubjectAccessReviewer checks the review carries the requestor as
// the CSR records it, and the answer is the server's.
func TestSubjectAccessReviewer(t *testing.T) {
	var got *authorizationv1.SubjectAccessReview
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		got = action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		return defaultPolicy(action)
	})
	spec := &certificatesv1.CertificateSigningRequestSpec{Username: "system:node:n1", UID: "u1", Groups: []string{"system:nodes"},
		Extra: map[string]certificatesv1.ExtraValue{"k": {"v"}}}
	for _, tc := range []struct {
		sub  string
		want bool
	}{{SelfNodeClient, true}, {NodeClient, false}} {
		ok, err := SubjectAccessReviewer{Client: cs}.Authorize(context.Background(), spec, tc.sub)
		if err != nil || ok != tc.want {
			t.Errorf("Authorize(%s) = %v, %v; want %v", tc.sub, ok, err, tc.want)
		}
		s := got.Spec
		if s.User != "system:node:n1" || s.UID != "u1" || !slices.Equal(s.Groups, spec.Groups) || s.Extra["k"][0] != "v" ||
			s.ResourceAttributes.Subresource != tc.sub {
			t.Errorf("review %+v", s)
		}
	}
	cs.PrependReactor("create", "subjectaccessreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("down")
	})
	if _, err := (SubjectAccessReviewer{Client: cs}).Authorize(context.Background(), spec, NodeClient); err == nil {
		t.Error("a failed review authorized nothing but returned no error")
	}
}

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// csrKey is a requester's key and its PEM encoding.
type csrKey struct {
	key    *ecdsa.PrivateKey
	keyPEM []byte
}

func newCSRKey(t *testing.T) csrKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return csrKey{key: key, keyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})}
}

// request returns a PEM certificate request for cn/orgs signed by k.
func (k csrKey) request(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, k.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csrManifest(name, signer string, request []byte, expiration string, usages ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata:\n  name: %s\nspec:\n  signerName: %s\n  request: %s\n", name, signer, base64.StdEncoding.EncodeToString(request))
	if expiration != "" {
		fmt.Fprintf(&b, "  expirationSeconds: %s\n", expiration)
	}
	b.WriteString("  usages:\n")
	for _, u := range usages {
		fmt.Fprintf(&b, "  - %s\n", u)
	}
	return b.String()
}

// waitCSR polls the CSR until done holds.
func waitCSR(t *testing.T, c kubernetes.Interface, name, what string, done func(*certificatesv1.CertificateSigningRequest) bool) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		csr, err := c.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && done(csr) {
			return csr
		}
		if time.Now().After(deadline) {
			t.Fatalf("CSR %s: timed out waiting for %s (last: %v, %+v)", name, what, err, csr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func issued(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Certificate) > 0
}

// verifyIssued parses the issued certificate and verifies it against the
// cluster CA for client auth.
func verifyIssued(t *testing.T, ca *x509.Certificate, certPEM []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("issued certificate is not PEM: %q", certPEM)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("issued certificate does not verify against the cluster CA: %v", err)
	}
	return cert
}

// certClient is a client authenticating with certPEM/keyPEM.
func certClient(t *testing.T, s *server, certPEM, keyPEM []byte) kubernetes.Interface {
	t.Helper()
	base := s.restConfig(t)
	cfg := &rest.Config{Host: base.Host, TLSClientConfig: rest.TLSClientConfig{CAData: base.CAData, CAFile: base.CAFile, CertData: certPEM, KeyData: keyPEM}}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// issueFromCA signs a client certificate for cn/orgs with the CA files
// `myriad up` wrote, as a cluster admin would for a bootstrapping node.
func issueFromCA(t *testing.T, s *server, k csrKey, cn string, orgs ...string) []byte {
	t.Helper()
	ca, caKey, err := pki.LoadCA(filepath.Join(s.dataDir, pki.CACertFile), filepath.Join(s.dataDir, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, k.key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCertificateSigningRequests runs CSRs through `myriad up` with kubectl:
// a client certificate requested, approved by hand, issued by the cluster
// CA and then used to authenticate; a kubelet client certificate requested
// by a bootstrapper and approved and issued without a human; a denial; a
// request the signer refuses; and kubectl explain.
func TestCertificateSigningRequests(t *testing.T) {
	c := shared.client(t)
	suffix := runSuffix()
	name := func(s string) string { return "csr-e2e-" + s + "-" + suffix }
	var created []string
	create := func(manifest, n string) {
		t.Helper()
		out := shared.mustKubectl(t, manifest, "create", "-f", "-")
		if !strings.Contains(out, "certificatesigningrequest.certificates.k8s.io/"+n+" created") {
			t.Fatalf("create %s: %q", n, out)
		}
		created = append(created, n)
	}
	defer func() {
		for _, n := range created {
			_ = c.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), n, metav1.DeleteOptions{})
		}
	}()
	caCert, _, err := pki.LoadCA(filepath.Join(shared.dataDir, pki.CACertFile), filepath.Join(shared.dataDir, pki.CAKeyFile))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("explain", func(t *testing.T) {
		out := shared.mustKubectl(t, "", "explain", "csr.spec")
		for _, want := range []string{"certificates.k8s.io", "signerName", "expirationSeconds", "usages"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl explain csr.spec lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("bad request", func(t *testing.T) {
		out, err := shared.kubectl(t, csrManifest(name("bad"), certificatesv1.KubeAPIServerClientSignerName, []byte("not a request"), "599", "client auth"), "create", "-f", "-")
		if err == nil {
			created = append(created, name("bad"))
			t.Fatalf("a bad CSR was created: %s", out)
		}
		for _, want := range []string{"is invalid", "spec.request", "spec.expirationSeconds"} {
			if !strings.Contains(out, want) {
				t.Errorf("error lacks %q: %s", want, out)
			}
		}
	})

	t.Run("system:masters refused", func(t *testing.T) {
		out, err := shared.kubectl(t, csrManifest(name("root"), certificatesv1.KubeAPIServerClientSignerName, newCSRKey(t).request(t, "root", "system:masters"), "", "client auth"), "create", "-f", "-")
		if err == nil {
			created = append(created, name("root"))
			t.Fatalf("a system:masters client CSR was created: %s", out)
		}
		if !strings.Contains(out, "is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed") {
			t.Errorf("error: %s", out)
		}
	})

	// A client certificate for alice, approved by hand.
	alice := newCSRKey(t)
	aliceCSR := name("alice")
	create(csrManifest(aliceCSR, certificatesv1.KubeAPIServerClientSignerName, alice.request(t, "csr-e2e-alice", "csr-e2e-team"), "3600", "digital signature", "client auth"), aliceCSR)
	out := shared.mustKubectl(t, "", "get", "csr", aliceCSR)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION" {
		t.Fatalf("kubectl get csr:\n%s", out)
	}
	row := strings.Fields(lines[1])
	if len(row) != 6 || row[0] != aliceCSR || row[2] != certificatesv1.KubeAPIServerClientSignerName || row[3] != "system:admin" || row[4] != "60m" || row[5] != "Pending" {
		t.Errorf("row %q, want the admin's pending one-hour request", row)
	}
	shared.mustKubectl(t, "", "certificate", "approve", aliceCSR)
	got := waitCSR(t, c, aliceCSR, "the certificate", issued)
	cert := verifyIssued(t, caCert, got.Status.Certificate)
	if cert.Subject.CommonName != "csr-e2e-alice" || !slices.Equal(cert.Subject.Organization, []string{"csr-e2e-team"}) {
		t.Errorf("issued subject %v", cert.Subject)
	}
	if d := time.Until(cert.NotAfter); d > time.Hour || d < 50*time.Minute {
		t.Errorf("issued certificate expires in %v, want the hour asked for", d)
	}
	if cond := shared.mustKubectl(t, "", "get", "csr", aliceCSR, "-o", "jsonpath={.status.conditions[0].reason}"); cond != "KubectlApprove" {
		t.Errorf("approval reason %q", cond)
	}
	if out := shared.mustKubectl(t, "", "get", "csr", aliceCSR, "--no-headers"); !strings.Contains(out, "Approved,Issued") {
		t.Errorf("get after issue: %s", out)
	}

	// The certificate authenticates alice: the API answers her, and a CSR
	// she creates names her (and her groups) as its requestor.
	ac := certClient(t, shared, got.Status.Certificate, alice.keyPEM)
	if _, err := ac.Discovery().ServerVersion(); err != nil {
		t.Fatalf("GET /version with the issued certificate: %v", err)
	}
	if err := ac.Discovery().RESTClient().Get().AbsPath("/api").Do(context.Background()).Error(); err != nil {
		t.Fatalf("GET /api with the issued certificate: %v", err)
	}
	// Asking for a certificate takes a role that allows it (RBAC): upstream's
	// system:node-bootstrapper, bound here to alice's group, the stranger and
	// the bootstrap tokens' group (as kubeadm binds it).
	binding := name("bootstrapper")
	shared.mustKubectl(t, "", "create", "clusterrolebinding", binding, "--clusterrole=system:node-bootstrapper",
		"--group=csr-e2e-team", "--group=system:bootstrappers", "--user=csr-e2e-stranger")
	defer func() { _, _ = shared.kubectl(t, "", "delete", "clusterrolebinding", binding) }()
	whoami := name("whoami")
	var mine *certificatesv1.CertificateSigningRequest
	// The binding reaches the RBAC index through its watch: retry briefly.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mine, err = ac.CertificatesV1().CertificateSigningRequests().Create(context.Background(), &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: whoami},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: alice.request(t, "x"), SignerName: "example.com/none", Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
			},
		}, metav1.CreateOptions{})
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	created = append(created, whoami)
	if mine.Spec.Username != "csr-e2e-alice" || !slices.Contains(mine.Spec.Groups, "csr-e2e-team") || !slices.Contains(mine.Spec.Groups, "system:authenticated") {
		t.Errorf("requestor %q %v, want alice and her groups", mine.Spec.Username, mine.Spec.Groups)
	}

	// A kubelet client certificate: a user outside the node groups gets no
	// automatic approval; a bootstrapper does, and the signer issues it.
	node := newCSRKey(t)
	strangerCSR := name("stranger")
	strangerKey := newCSRKey(t)
	sc := certClient(t, shared, issueFromCA(t, shared, strangerKey, "csr-e2e-stranger", "dev"), strangerKey.keyPEM)
	nodeCSR := func(n string) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: node.request(t, "system:node:csr-e2e-node", "system:nodes"), SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
				Usages: []certificatesv1.KeyUsage{"digital signature", "key encipherment", "client auth"},
			},
		}
	}
	if _, err := sc.CertificatesV1().CertificateSigningRequests().Create(context.Background(), nodeCSR(strangerCSR), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created = append(created, strangerCSR)
	bootKey := newCSRKey(t)
	bc := certClient(t, shared, issueFromCA(t, shared, bootKey, "system:bootstrap:e2e"+suffix, "system:bootstrappers"), bootKey.keyPEM)
	bootCSR := name("node")
	if _, err := bc.CertificatesV1().CertificateSigningRequests().Create(context.Background(), nodeCSR(bootCSR), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created = append(created, bootCSR)
	got = waitCSR(t, c, bootCSR, "automatic approval and issue", issued)
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "AutoApproved" {
		t.Errorf("conditions %+v, want one AutoApproved", got.Status.Conditions)
	}
	if cert := verifyIssued(t, caCert, got.Status.Certificate); cert.Subject.CommonName != "system:node:csr-e2e-node" {
		t.Errorf("node certificate subject %v", cert.Subject)
	}
	if out := shared.mustKubectl(t, "", "get", "csr", strangerCSR, "--no-headers"); !strings.Contains(out, "Pending") {
		t.Errorf("the stranger's node CSR was acted on: %s", out)
	}

	// A denial.
	denyCSR := name("deny")
	create(csrManifest(denyCSR, certificatesv1.KubeAPIServerClientSignerName, newCSRKey(t).request(t, "csr-e2e-mallory"), "", "client auth"), denyCSR)
	shared.mustKubectl(t, "", "certificate", "deny", denyCSR)
	got = waitCSR(t, c, denyCSR, "the Denied condition", func(csr *certificatesv1.CertificateSigningRequest) bool { return len(csr.Status.Conditions) > 0 })
	if got.Status.Conditions[0].Type != certificatesv1.CertificateDenied || got.Status.Conditions[0].Reason != "KubectlDeny" {
		t.Errorf("conditions %+v, want Denied by kubectl", got.Status.Conditions)
	}
	if out := shared.mustKubectl(t, "", "get", "csr", denyCSR, "--no-headers"); !strings.Contains(out, "Denied") {
		t.Errorf("get after deny: %s", out)
	}
	time.Sleep(time.Second) // the signer would have acted by now
	if got, _ := c.CertificatesV1().CertificateSigningRequests().Get(context.Background(), denyCSR, metav1.GetOptions{}); issued(got) {
		t.Error("a denied request was issued")
	}

	// A request the signer refuses: approved, then Failed.
	serverCSR := name("server")
	create(csrManifest(serverCSR, certificatesv1.KubeAPIServerClientSignerName, newCSRKey(t).request(t, "csr-e2e-server"), "", "client auth", "server auth"), serverCSR)
	shared.mustKubectl(t, "", "certificate", "approve", serverCSR)
	waitCSR(t, c, serverCSR, "the Failed condition", func(csr *certificatesv1.CertificateSigningRequest) bool {
		for _, cond := range csr.Status.Conditions {
			if cond.Type == certificatesv1.CertificateFailed && cond.Reason == "SignerValidationFailure" && strings.Contains(cond.Message, "server auth") {
				return true
			}
		}
		return false
	})
	if out := shared.mustKubectl(t, "", "get", "csr", serverCSR, "--no-headers"); !strings.Contains(out, "Approved,Failed") {
		t.Errorf("get after failure: %s", out)
	}

	// The field selector kubectl and the kubelet use.
	out = shared.mustKubectl(t, "", "get", "csr", "--field-selector", "spec.signerName="+certificatesv1.KubeAPIServerClientKubeletSignerName, "-o", "name")
	if !strings.Contains(out, bootCSR) || strings.Contains(out, aliceCSR) {
		t.Errorf("field selector on spec.signerName: %s", out)
	}
}

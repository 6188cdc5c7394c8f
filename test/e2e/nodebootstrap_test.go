package e2e

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/cluster-bootstrap/token/jws"
)

// bootstrapToken runs `myriad kubeconfig --bootstrap` against s and
// returns the kubeconfig's path and its token.
func bootstrapToken(t *testing.T, s *server, args ...string) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "bootstrap.kubeconfig")
	out, err := exec.Command(binary, append([]string{"kubeconfig", "--bootstrap", "--data-dir", s.dataDir, "-o", path}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("myriad kubeconfig --bootstrap: %v\n%s", err, out)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != s.restConfig(t).Host || len(rc.CAData) == 0 || rc.BearerToken == "" {
		t.Fatalf("bootstrap kubeconfig: host %s, %d bytes of CA, token %q", rc.Host, len(rc.CAData), rc.BearerToken)
	}
	return path, rc.BearerToken
}

// as is s seen through the kubeconfig at path.
func as(s *server, path string) *server {
	u := *s
	u.kubeconfig = path
	return &u
}

// certKubeconfig writes a kubeconfig for s authenticating with certPEM/keyPEM.
func certKubeconfig(t *testing.T, s *server, certPEM, keyPEM []byte) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, ai := range cfg.AuthInfos {
		ai.Token = ""
		ai.ClientCertificateData, ai.ClientKeyData = certPEM, keyPEM
	}
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func clientFor(t *testing.T, path string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// servingRequest is a PEM kubelet serving certificate request.
func (k csrKey) servingRequest(t *testing.T, node string, dns []string, ips ...string) []byte {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, k.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestNodeBootstrap is a kubelet's TLS bootstrap against `myriad up`, done
// step by step with kubectl and client-go as the kubelet does it: a
// bootstrap token from `myriad kubeconfig --bootstrap`, a node client CSR
// approved by SubjectAccessReview and issued, the node's own identity,
// a renewal, kubelet serving certificates approved by the address policy,
// cluster-info signed for the token, and expired and deleted tokens
// refused.
func TestNodeBootstrap(t *testing.T) {
	s := shared
	ctx := context.Background()
	admin := s.client(t)
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e6)
	nodeName := "boot-" + suffix

	bootPath, token := bootstrapToken(t, s)
	id, _, _ := strings.Cut(token, ".")
	t.Cleanup(func() {
		_ = admin.CoreV1().Secrets("kube-system").Delete(ctx, "bootstrap-token-"+id, metav1.DeleteOptions{})
		_ = admin.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
	})
	boot := as(s, bootPath)
	user, groups := whoami(t, boot)
	if user != "system:bootstrap:"+id || !slices.Contains(groups, "system:bootstrappers") ||
		!slices.Contains(groups, "system:bootstrappers:myriad:default-node-token") || !slices.Contains(groups, "system:authenticated") {
		t.Fatalf("bootstrap token is %s in %v", user, groups)
	}
	// A bootstrapper may do little else.
	if out, err := boot.kubectl(t, "", "get", "pods", "-A"); err == nil || !strings.Contains(out, "Forbidden") {
		t.Errorf("a bootstrap token listed pods: %v\n%s", err, out)
	}

	// TLS bootstrap: the kubelet's client certificate request, as the
	// bootstrapper, approved and issued without a human.
	caCert := verifyCA(t, s)
	nodeKey := newCSRKey(t)
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth}
	requestClient := func(c kubernetes.Interface, name string, key csrKey) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		_, err := c.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request: key.request(t, "system:node:"+nodeName, "system:nodes"), SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
				Usages: clientUsages,
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating CSR %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
		})
		start := time.Now()
		got := waitCSR(t, c, name, "approval and issue", issued)
		t.Logf("CSR %s approved and issued in %v", name, time.Since(start).Round(time.Millisecond))
		return got
	}
	bootCSR := "boot-client-" + suffix
	got := requestClient(clientFor(t, bootPath), bootCSR, nodeKey)
	if c := got.Status.Conditions; len(c) != 1 || c[0].Reason != "AutoApproved" || !strings.Contains(c[0].Message, "Auto approving kubelet client certificate") {
		t.Errorf("bootstrap CSR conditions %+v", c)
	}
	if got.Spec.Username != "system:bootstrap:"+id {
		t.Errorf("CSR requestor %s", got.Spec.Username)
	}
	cert := verifyIssued(t, caCert, got.Status.Certificate)
	if cert.Subject.CommonName != "system:node:"+nodeName || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("issued subject %v", cert.Subject)
	}

	// With its certificate the kubelet is the node, and registers.
	nodePath := certKubeconfig(t, s, got.Status.Certificate, nodeKey.keyPEM)
	node := as(s, nodePath)
	if user, groups := whoami(t, node); user != "system:node:"+nodeName || !slices.Contains(groups, "system:nodes") {
		t.Fatalf("issued certificate is %s in %v", user, groups)
	}
	nc := clientFor(t, nodePath)
	const ownIP, foreignIP = "10.99.0.5", "10.99.0.6"
	_, err := nc.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: nodeName},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: ownIP}, {Type: corev1.NodeHostName, Address: nodeName},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the node creating its Node: %v", err)
	}
	if _, err := nc.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName + "-other"}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node created another node's Node: %v", err)
	}

	// Rotation: the node renews as itself (selfnodeclient).
	renewKey := newCSRKey(t)
	got = requestClient(nc, "boot-renew-"+suffix, renewKey)
	if c := got.Status.Conditions; len(c) != 1 || !strings.Contains(c[0].Message, "Auto approving self kubelet client certificate") {
		t.Errorf("renewal conditions %+v", c)
	}
	if user, _ := whoami(t, as(s, certKubeconfig(t, s, got.Status.Certificate, renewKey.keyPEM))); user != "system:node:"+nodeName {
		t.Errorf("renewed certificate is %s", user)
	}

	// Serving certificates: approved for the node's own addresses only.
	requestServing := func(name string, ips ...string) {
		t.Helper()
		_, err := nc.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{
				Request:    newCSRKey(t).servingRequest(t, nodeName, []string{nodeName}, ips...),
				SignerName: certificatesv1.KubeletServingSignerName,
				Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating serving CSR %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, name, metav1.DeleteOptions{})
		})
	}
	ownCSR, foreignCSR := "boot-serving-"+suffix, "boot-serving-foreign-"+suffix
	requestServing(foreignCSR, ownIP, foreignIP)
	requestServing(ownCSR, ownIP)
	got = waitCSR(t, nc, ownCSR, "approval and issue", issued)
	block, _ := pem.Decode(got.Status.Certificate)
	if block == nil {
		t.Fatal("serving certificate is not PEM")
	}
	servingCert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(caCert)
	if _, err := servingCert.Verify(x509.VerifyOptions{Roots: roots, DNSName: nodeName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate: %v", err)
	}
	if len(servingCert.IPAddresses) != 1 || servingCert.IPAddresses[0].String() != ownIP {
		t.Errorf("serving certificate IPs %v", servingCert.IPAddresses)
	}
	time.Sleep(2 * time.Second) // the approver has long acted on the earlier request
	if got, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, foreignCSR, metav1.GetOptions{}); err != nil || len(got.Status.Conditions) != 0 || issued(got) {
		t.Errorf("a serving CSR with a foreign IP was acted on: %v %+v", err, got.Status)
	}

	// cluster-info, readable without credentials, signed for the token.
	cm := anonymousClusterInfo(t, s, caCert)
	sig := cm.Data["jws-kubeconfig-"+id]
	if sig == "" || !jws.DetachedTokenIsValid(sig, cm.Data["kubeconfig"], id, strings.SplitN(token, ".", 2)[1]) {
		t.Errorf("cluster-info has no valid signature for token %s: %v", id, cm.Data)
	}
	// Only that one object: the rest of kube-public still needs credentials.
	if code := anonymousGet(t, s, caCert, "/api/v1/namespaces/kube-public/configmaps"); code != http.StatusUnauthorized {
		t.Errorf("anonymous list of kube-public's ConfigMaps: %d, want 401", code)
	}
	if ci, err := clientcmd.Load([]byte(cm.Data["kubeconfig"])); err != nil || ci.Clusters[""] == nil || ci.Clusters[""].Server != s.restConfig(t).Host {
		t.Errorf("cluster-info kubeconfig %v: %v", ci, err)
	}

	// A deleted token stops working at once; so does an expired one, and
	// the token cleaner deletes it.
	if err := admin.CoreV1().Secrets("kube-system").Delete(ctx, "bootstrap-token-"+id, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUnauthorized(t, bootPath)
	shortPath, short := bootstrapToken(t, s, "--ttl", "3s")
	shortID, _, _ := strings.Cut(short, ".")
	if user, _ := whoami(t, as(s, shortPath)); user != "system:bootstrap:"+shortID {
		t.Fatalf("fresh token is %s", user)
	}
	waitUnauthorized(t, shortPath)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := admin.CoreV1().Secrets("kube-system").Get(ctx, "bootstrap-token-"+shortID, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the token cleaner did not delete the expired token: %v", err)
		}
	}
	waitSignatureGone(t, s, caCert, shortID)
}

// verifyCA is s's cluster CA certificate.
func verifyCA(t *testing.T, s *server) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(s.restConfig(t).CAData)
	if block == nil {
		data, err := os.ReadFile(filepath.Join(s.dataDir, "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		block, _ = pem.Decode(data)
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// waitUnauthorized polls a request with the kubeconfig at path until the
// server answers 401.
func waitUnauthorized(t *testing.T, path string) {
	t.Helper()
	c := clientFor(t, path)
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := c.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{Limit: 1})
		if apierrors.IsUnauthorized(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("token still accepted: %v", err)
		}
	}
}

// anonymousClusterInfo GETs kube-public/cluster-info with no credentials.
func anonymousClusterInfo(t *testing.T, s *server, ca *x509.Certificate) *corev1.ConfigMap {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := hc.Get(s.restConfig(t).Host + "/api/v1/namespaces/kube-public/configmaps/cluster-info")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("anonymous GET cluster-info: %s\n%s", resp.Status, body)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(body, &cm); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// waitSignatureGone waits until cluster-info has no signature for id.
func waitSignatureGone(t *testing.T, s *server, ca *x509.Certificate, id string) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if _, ok := anonymousClusterInfo(t, s, ca).Data["jws-kubeconfig-"+id]; !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster-info still signed for the expired token %s", id)
		}
	}
}

// anonymousGet is the status of a GET of path with no credentials.
func anonymousGet(t *testing.T, s *server, ca *x509.Certificate, path string) int {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	resp, err := hc.Get(s.restConfig(t).Host + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

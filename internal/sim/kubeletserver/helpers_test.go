package kubeletserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

// staticPods is a Pods of fixed pods on one node, changeable by tests.
type staticPods struct {
	mu   sync.Mutex
	node string
	down bool
	pods map[string]*corev1.Pod
}

func (p *staticPods) NodeDown(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down
}

func (p *staticPods) Pod(ns, name string) (*corev1.Pod, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pod, ok := p.pods[ns+"/"+name]
	return pod, p.node, ok
}

func (p *staticPods) set(pod *corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[pod.Namespace+"/"+pod.Name] = pod
}

// runningPod is pod ns/name with running containers started at start, and
// container "init" waiting.
func runningPod(ns, name string, start time.Time, containers ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(start)}},
		})
	}
	p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// testPKI is a cluster CA with the certificates the tests need.
type testPKI struct {
	ca                      *x509.Certificate
	caKey                   *ecdsa.PrivateKey
	caPEM                   []byte
	serving                 tls.Certificate
	apiserverCert, nodeCert [2][]byte // cert PEM, key PEM
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	certPEM, keyPEM := p.issue(t, pkix.Name{CommonName: "system:node:hollow-node-0", Organization: []string{"system:nodes"}}, x509.ExtKeyUsageServerAuth)
	if p.serving, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Fatal(err)
	}
	p.apiserverCert[0], p.apiserverCert[1] = p.issue(t, pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}}, x509.ExtKeyUsageClientAuth)
	p.nodeCert[0], p.nodeCert[1] = p.issue(t, pkix.Name{CommonName: "system:node:hollow-node-1", Organization: []string{"system:nodes"}}, x509.ExtKeyUsageClientAuth)
	return p
}

var serial = big.NewInt(100)

func (p *testPKI) issue(t testing.TB, subject pkix.Name, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial = new(big.Int).Add(serial, big.NewInt(1))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func (p *testPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.ca)
	return pool
}

// testServer is a Server behind a real TLS listener.
type testServer struct {
	*Server
	pki   *testPKI
	pods  *staticPods
	clock *testingclock.FakeClock
	url   string
}

// newTestServer serves pods "default/web" (containers app, sidecar; started
// at t0) on a fake clock at t0+10.5s, one log line a second.
func newTestServer(t testing.TB, mutate func(*Config)) *testServer {
	t.Helper()
	pki := newTestPKI(t)
	pods := &staticPods{node: "hollow-node-0", pods: map[string]*corev1.Pod{}}
	pods.set(runningPod("default", "web", t0, "app", "sidecar"))
	clk := testingclock.NewFakeClock(t0.Add(10*time.Second + 500*time.Millisecond))
	cfg := Config{Pods: pods, ClientCAs: pki.pool(), Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.TLS = s.TLSConfig(&pki.serving)
	hs.StartTLS()
	t.Cleanup(hs.Close)
	return &testServer{Server: s, pki: pki, pods: pods, clock: clk, url: hs.URL}
}

// restConfig reaches ts as the API server does: its kubelet client
// certificate, the cluster CA.
func (ts *testServer) restConfig() *rest.Config {
	return &rest.Config{Host: ts.url, TLSClientConfig: rest.TLSClientConfig{
		CAData: ts.pki.caPEM, CertData: ts.pki.apiserverCert[0], KeyData: ts.pki.apiserverCert[1],
	}}
}

// httpClient is an HTTP client of ts with cert (nil: none).
func (ts *testServer) httpClient(t testing.TB, cert *[2][]byte) *http.Client {
	t.Helper()
	tc := &tls.Config{RootCAs: ts.pki.pool()}
	if cert != nil {
		c, err := tls.X509KeyPair(cert[0], cert[1])
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
}

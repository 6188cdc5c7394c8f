package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// TestSimKubeletAPI runs hollow nodes with their kubelet API against a
// real myriad up: the serving certificate comes through a
// kubernetes.io/kubelet-serving CSR the simulator approves and the signer
// issues, every node reports the listener, and a client holding a
// certificate from the cluster CA (as the API server's kubelet client
// does) reads logs and execs, verifying the server by CA and IP SAN.
func TestSimKubeletAPI(t *testing.T) {
	srv, hs := startWithHollowNodes(t, "simkubelet", 3, func(c *sim.Config) {
		c.Kubelet.Enabled = true
		c.Kubelet.CertificateTimeout = 30 * time.Second
	})
	c := srv.client(t)
	ctx := context.Background()
	addr := hs.KubeletAddress()
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("kubelet address %q: %v", addr, err)
	}
	port, _ := strconv.Atoi(portStr)

	var issued *certificatesv1.CertificateSigningRequest
	t.Run("serving certificate through a CSR", func(t *testing.T) {
		csrs, err := c.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range csrs.Items {
			if csrs.Items[i].Spec.SignerName == certificatesv1.KubeletServingSignerName {
				issued = &csrs.Items[i]
			}
		}
		if issued == nil {
			t.Fatal("no kubelet-serving CSR")
		}
		approved := false
		for _, cond := range issued.Status.Conditions {
			approved = approved || cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue
		}
		block, _ := pem.Decode(issued.Status.Certificate)
		if !approved || block == nil {
			t.Fatalf("CSR %s: approved %v, certificate %d bytes", issued.Name, approved, len(issued.Status.Certificate))
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if cert.Subject.CommonName != "system:node:hollow-node-0" || len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) ||
			len(cert.DNSNames) != 3 {
			t.Errorf("certificate: CN %q, IPs %v, DNS %v", cert.Subject.CommonName, cert.IPAddresses, cert.DNSNames)
		}
	})

	t.Run("nodes report the listener", func(t *testing.T) {
		for _, name := range hs.NodeNames() {
			n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: name}}
			if len(n.Status.Addresses) != 2 || n.Status.Addresses[0] != want[0] || n.Status.Addresses[1] != want[1] ||
				int(n.Status.DaemonEndpoints.KubeletEndpoint.Port) != port {
				t.Errorf("node %s: addresses %v, kubelet port %d; want %v, %d", name, n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port, want, port)
			}
		}
	})

	// The API server's kubelet client certificate, from the cluster CA.
	creds, err := pki.LoadIssuer(srv.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := creds.IssueClientCertificate("kube-apiserver-kubelet-client", nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(creds.CACert)
	clientCert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	httpc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{clientCert},
	}}}

	pod := simPod("logger", "hollow-node-1", "100m")
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	deadline := time.Now().Add(20 * time.Second)
	for {
		p, err := c.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not Running: %v %v", p.Status.Phase, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("logs", func(t *testing.T) {
		resp, err := httpc.Get("https://" + addr + "/containerLogs/default/logger/app?tailLines=1&timestamps=true")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := regexp.MustCompile(`^\S+Z hollow-node-1 default/logger/app line \d+\n$`)
		if resp.StatusCode != 200 || !want.Match(body) {
			t.Errorf("logs: %d %q", resp.StatusCode, body)
		}
		if got := resp.TLS.PeerCertificates[0].Raw; issued != nil {
			block, _ := pem.Decode(issued.Status.Certificate)
			if !bytes.Equal(got, block.Bytes) {
				t.Error("the listener does not serve the certificate the CSR issued")
			}
		}
		resp, err = httpc.Get("https://" + addr + "/containerLogs/default/no-such-pod/app")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("logs of an unknown pod: %d, want 404", resp.StatusCode)
		}
	})

	t.Run("exec", func(t *testing.T) {
		u, _ := url.Parse("https://" + addr + "/exec/default/logger/app?command=echo&command=hi&output=1&error=1")
		e, err := remotecommand.NewSPDYExecutor(&rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{
			CAData: creds.CAPEM, CertData: certPEM, KeyData: keyPEM,
		}}, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil || out.String() != "hi\n" {
			t.Errorf("exec: %q, %v", out.String(), err)
		}
	})

	// The same through the API server, as users reach it: kubectl logs,
	// exec (WebSocket, translated by the API server) and port-forward.
	t.Run("kubectl", func(t *testing.T) {
		// The container writes a line a second from its start: wait for
		// the second.
		twoLines := regexp.MustCompile(`^(hollow-node-1 default/logger/app line \d+\n){2}$`)
		var out string
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if out, err = srv.kubectl(t, "", "logs", "logger", "--tail=2"); err == nil && twoLines.MatchString(out) {
				break
			}
		}
		if err != nil || !twoLines.MatchString(out) {
			t.Errorf("kubectl logs --tail=2: %v\n%s", err, out)
		}
		// Only stdout is the command's: kubectl logs to stderr, and
		// kubectl 1.32's WebSocket client may log "Unknown stream id 1,
		// discarding message" when the first stdout frame beats its stream
		// set-up (its read loop started before the streams existed); such
		// a run may lose that frame, so it is tried again.
		for attempt := 1; ; attempt++ {
			stdout, stderr, err := kubectlStdout(srv, "exec", "logger", "--", "echo", "hi")
			if err == nil && stdout == "hi\n" {
				break
			}
			if attempt == 3 || !strings.Contains(stderr, "Unknown stream id") {
				t.Errorf("kubectl exec echo hi: %v\nstdout %q\nstderr %q", err, stdout, stderr)
				break
			}
		}
		_, err = srv.kubectl(t, "", "exec", "logger", "--", "sh", "-c", "exit 3")
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
			t.Errorf("kubectl exec sh -c 'exit 3': %v; want exit code 3", err)
		}
		pfCtx, stop := context.WithCancel(ctx)
		defer stop()
		pf := exec.CommandContext(pfCtx, "kubectl", "--kubeconfig", srv.kubeconfig, "port-forward", "pod/logger", ":8080")
		stdout, _ := pf.StdoutPipe()
		if err := pf.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { stop(); _ = pf.Wait() }()
		line, err := bufio.NewReader(stdout).ReadString('\n') // Forwarding from 127.0.0.1:PORT -> 8080
		m := regexp.MustCompile(`127\.0\.0\.1:(\d+) ->`).FindStringSubmatch(line)
		if err != nil || m == nil {
			t.Fatalf("kubectl port-forward: %q, %v", line, err)
		}
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+m[1], 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
			t.Errorf("port-forward echo: %q, %v", buf, err)
		}
	})

	t.Run("no client certificate", func(t *testing.T) {
		anon := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
		resp, err := anon.Get("https://" + addr + "/containerLogs/default/logger/app")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("without a client certificate: %d, want 401", resp.StatusCode)
		}
	})
}

// kubectlStdout runs kubectl against srv and returns its stdout and
// stderr apart.
func kubectlStdout(srv *server, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", srv.kubeconfig}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

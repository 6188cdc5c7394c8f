package pki

import (
	"bytes"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureCredentialsCreatesThenReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	first, err := EnsureCredentials(dir, Options{BindAddress: "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{
		CACertFile: 0o644, CAKeyFile: 0o600, ServingCertFile: 0o644, ServingKeyFile: 0o600, TokenFile: 0o600,
	} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != mode {
			t.Errorf("%s mode %v, want %v", name, fi.Mode().Perm(), mode)
		}
	}
	if len(first.Token) < 43 {
		t.Errorf("token %q shorter than 256 bits", first.Token)
	}

	second, err := EnsureCredentials(dir, Options{BindAddress: "0.0.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	if !second.CACert.Equal(first.CACert) || second.Token != first.Token ||
		!bytes.Equal(second.ServingCert.Certificate[0], first.ServingCert.Certificate[0]) {
		t.Fatal("second start did not reuse CA, token and serving certificate")
	}
}

func TestServingCertReissued(t *testing.T) {
	tests := []struct {
		name   string
		second Options
	}{
		{"new bind address", Options{BindAddress: "10.1.2.3"}},
		{"new extra name", Options{ExtraSANs: []string{"api.example.com"}}},
		{"near expiry", Options{Now: func() time.Time { return time.Now().Add(340 * 24 * time.Hour) }}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first, err := EnsureCredentials(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			second, err := EnsureCredentials(dir, tt.second)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(second.ServingCert.Certificate[0], first.ServingCert.Certificate[0]) {
				t.Fatal("serving certificate was not re-issued")
			}
			if !second.CACert.Equal(first.CACert) || second.Token != first.Token {
				t.Fatal("CA or token changed")
			}
			leaf := second.ServingCert.Leaf
			for _, name := range append([]string{tt.second.BindAddress}, tt.second.ExtraSANs...) {
				if name != "" && leaf.VerifyHostname(name) != nil {
					t.Errorf("re-issued certificate does not cover %q", name)
				}
			}
		})
	}
}

func TestHalfCAIsAnError(t *testing.T) {
	dir := t.TempDir()
	if _, err := EnsureCredentials(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, CAKeyFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureCredentials(dir, Options{}); err == nil {
		t.Fatal("CA certificate without key accepted")
	}
}

// startServer serves TLS with creds on 127.0.0.1 and echoes the
// Authorization header, standing in for the API server.
func startServer(t *testing.T, creds *Credentials) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2","auth":"`+r.Header.Get("Authorization")+`","proto":"`+r.Proto+`"}`)
	}))
	srv.TLS = creds.TLSConfig()
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSHandshakeVerifiesAgainstCA(t *testing.T) {
	creds, err := EnsureCredentials(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, creds)
	for _, serverName := range []string{"localhost", "127.0.0.1", "kubernetes.default.svc"} {
		t.Run(serverName, func(t *testing.T) {
			conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{
				RootCAs: creds.CAPool(), ServerName: serverName, NextProtos: []string{"h2"},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
				t.Errorf("ALPN negotiated %q, want h2", p)
			}
		})
	}
	// A client that does not trust our CA must fail.
	if conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "localhost"}); err == nil {
		conn.Close()
		t.Fatal("handshake succeeded without trusting the CA")
	}
	if conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{RootCAs: creds.CAPool(), ServerName: "localhost", MaxVersion: tls.VersionTLS11}); err == nil {
		conn.Close()
		t.Fatal("TLS 1.1 accepted")
	}
}

func TestKubeconfigUsableByClientGoAndKubectl(t *testing.T) {
	dir := t.TempDir()
	creds, err := EnsureCredentials(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, creds)
	path := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(path, srv.URL, creds); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("kubeconfig mode %v, want 0600", fi.Mode().Perm())
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`"auth":"Bearer `+creds.Token+`"`)) {
		t.Fatalf("server saw %s, want the admin token", body)
	}

	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH")
	}
	out, err := exec.Command(kubectl, "--kubeconfig", path, "get", "--raw", "/version").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v: %s", err, out)
	}
	if !bytes.Contains(out, []byte(creds.Token)) {
		t.Fatalf("kubectl did not send the token: %s", out)
	}
}

func TestIssueClientCertificate(t *testing.T) {
	creds, err := EnsureCredentials(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := creds.IssueClientCertificate("system:node:n1", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: creds.CAPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "system:node:n1" || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "system:nodes" {
		t.Fatalf("subject %v", leaf.Subject)
	}
}

func TestServerURL(t *testing.T) {
	for _, tt := range []struct {
		bind string
		want string
	}{
		{"", "https://127.0.0.1:6443"},
		{"0.0.0.0", "https://127.0.0.1:6443"},
		{"::", "https://127.0.0.1:6443"},
		{"10.0.0.1", "https://10.0.0.1:6443"},
		{"::1", "https://[::1]:6443"},
		{"myhost", "https://myhost:6443"},
	} {
		if got := ServerURL(tt.bind, 6443); got != tt.want {
			t.Errorf("ServerURL(%q) = %q, want %q", tt.bind, got, tt.want)
		}
	}
}

func TestLoadCA(t *testing.T) {
	dir := t.TempDir()
	creds, err := EnsureCredentials(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, CACertFile)
	cases := []struct {
		name, cert, key string
		ok              bool
	}{
		{"the CA", ca, filepath.Join(dir, CAKeyFile), true},
		{"missing key", ca, filepath.Join(dir, "nope"), false},
		{"serving key", ca, filepath.Join(dir, ServingKeyFile), false},
		{"not a CA", filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cert, key, err := LoadCA(tc.cert, tc.key)
			if (err == nil) != tc.ok {
				t.Fatalf("LoadCA: %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && (!cert.Equal(creds.CACert) || key == nil) {
				t.Fatal("LoadCA returned another CA")
			}
		})
	}
}

func TestServiceAccountKeyCreatedOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	first, err := EnsureServiceAccountKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := first.(*rsa.PrivateKey); !ok {
		t.Fatalf("created key is %T, want RSA", first)
	}
	if fi, err := os.Stat(filepath.Join(dir, ServiceAccountKeyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("sa.key: %v %v", fi, err)
	}
	second, err := EnsureServiceAccountKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !first.(*rsa.PrivateKey).Equal(second) {
		t.Fatal("second call replaced the key")
	}
	pubs, err := LoadPublicKeys(filepath.Join(dir, ServiceAccountPublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(pubs) != 1 || !first.Public().(*rsa.PublicKey).Equal(pubs[0]) {
		t.Fatal("sa.pub does not hold the key's public half")
	}
	// The private key file also serves as a public key file, as upstream.
	if pubs, err := LoadPublicKeys(filepath.Join(dir, ServiceAccountKeyFile)); err != nil || len(pubs) != 1 {
		t.Fatalf("public keys from sa.key: %v %v", pubs, err)
	}
	if _, err := EnsureCredentials(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPublicKeys(filepath.Join(dir, CACertFile)); err != nil {
		t.Fatalf("public key from a certificate: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.key"), []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrivateKey(filepath.Join(dir, "bad.key")); err == nil {
		t.Fatal("garbage accepted as a private key")
	}
	if _, err := LoadPublicKeys(filepath.Join(dir, "bad.key")); err == nil {
		t.Fatal("garbage accepted as public keys")
	}
}

package pki

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Credentials are the server's TLS identity, the CA that clients trust and
// that client certificates must chain to, and the admin bearer token.
// Immutable after EnsureCredentials returns; safe for concurrent use.
type Credentials struct {
	// Dir is the directory the files live in.
	Dir string
	// CACert is the certificate authority; CAPEM is its PEM encoding, as
	// put into kubeconfigs.
	CACert *x509.Certificate
	CAPEM  []byte
	// ServingCert is the server's certificate chain and key.
	ServingCert tls.Certificate
	// Token is the admin bearer token (system:admin, system:masters).
	Token string

	ca *keyPair
}

// EnsureCredentials loads the credentials in dir, creating whatever is
// missing, and re-issues the serving certificate when it does not cover the
// names opts asks for, is not signed by the CA, or expires within
// opts.RenewBefore. An existing CA or token is never replaced; a CA
// certificate without its key (or the reverse) is an error rather than a
// reason to start over, because replacing the CA would silently invalidate
// every kubeconfig and client certificate already handed out.
func EnsureCredentials(dir string, opts Options) (*Credentials, error) {
	opts = opts.withDefaults()
	now := opts.Now()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}

	ca, err := ensureCA(dir, now, opts.CAValidity)
	if err != nil {
		return nil, err
	}
	token, err := ensureToken(filepath.Join(dir, TokenFile))
	if err != nil {
		return nil, err
	}
	serving, err := ensureServing(dir, ca, now, opts)
	if err != nil {
		return nil, err
	}
	tlsCert, err := tls.X509KeyPair(serving.certPEM, serving.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: serving key pair: %w", err)
	}
	tlsCert.Leaf = serving.cert
	return &Credentials{
		Dir:         dir,
		CACert:      ca.cert,
		CAPEM:       ca.certPEM,
		ServingCert: tlsCert,
		Token:       token,
		ca:          ca,
	}, nil
}

func ensureCA(dir string, now time.Time, validity time.Duration) (*keyPair, error) {
	return ensureCAFiles(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), "myriad-ca", now, validity)
}

// ensureCAFiles loads the CA at certPath and keyPath or creates one named
// name; see EnsureCredentials for why half a CA is an error.
func ensureCAFiles(certPath, keyPath, name string, now time.Time, validity time.Duration) (*keyPair, error) {
	certPEM, err := readFileIfExists(certPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := readFileIfExists(keyPath)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	switch {
	case certPEM != nil && keyPEM != nil:
		ca, err := parseKeyPair(certPEM, keyPEM, certPath, keyPath)
		if err != nil {
			return nil, err
		}
		if !ca.cert.IsCA {
			return nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
		}
		return ca, nil
	case certPEM != nil || keyPEM != nil:
		return nil, fmt.Errorf("pki: only one of %s and %s exists; restore the other or remove both to create a new CA (invalidates existing kubeconfigs)", certPath, keyPath)
	}
	ca, err := newNamedCA(name, now, validity)
	if err != nil {
		return nil, err
	}
	// Key first: a crash between the two writes leaves a key without a
	// certificate, which the check above reports instead of guessing.
	if err := writeFileAtomic(keyPath, ca.keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writeFileAtomic(certPath, ca.certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return ca, nil
}

func ensureToken(path string) (string, error) {
	data, err := readFileIfExists(path)
	if err != nil {
		return "", fmt.Errorf("pki: %w", err)
	}
	if data != nil {
		token := string(bytes.TrimSpace(data))
		if len(token) < 32 {
			return "", fmt.Errorf("pki: %s: token too short (%d bytes)", path, len(token))
		}
		return token, nil
	}
	buf := make([]byte, 32) // 256 bits
	if _, err := rand.Read(buf); err != nil {
		return "", fmt.Errorf("pki: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(buf)
	if err := writeFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("pki: %w", err)
	}
	return token, nil
}

func ensureServing(dir string, ca *keyPair, now time.Time, opts Options) (*keyPair, error) {
	certPath, keyPath := filepath.Join(dir, ServingCertFile), filepath.Join(dir, ServingKeyFile)
	dns, ips := opts.sans()
	if kp := loadServing(certPath, keyPath); kp != nil &&
		kp.cert.CheckSignatureFrom(ca.cert) == nil &&
		covers(kp.cert, dns, ips) &&
		now.Add(opts.RenewBefore).Before(kp.cert.NotAfter) {
		return kp, nil
	}
	kp, err := issue(ca, now, opts.ServingValidity, "myriad-apiserver", nil, x509.ExtKeyUsageServerAuth, dns, ips)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(keyPath, kp.keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := writeFileAtomic(certPath, kp.certPEM, 0o644); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return kp, nil
}

// loadServing returns nil for a missing or unusable serving pair: unlike the
// CA, it is derived data and simply re-issued.
func loadServing(certPath, keyPath string) *keyPair {
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	if err1 != nil || err2 != nil {
		return nil
	}
	kp, err := parseKeyPair(certPEM, keyPEM, certPath, keyPath)
	if err != nil {
		return nil
	}
	return kp
}

// CAPool returns a new pool holding only the CA: the roots clients verify
// the server against, and the server verifies client certificates against.
func (c *Credentials) CAPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(c.CACert)
	return pool
}

// TLSConfig returns a new server TLS configuration: TLS 1.2 or later, HTTP/2
// and HTTP/1.1 by ALPN, and client certificates requested but not required.
// Client certificates are verified by the authenticator, not the handshake,
// so a client with a bad certificate gets a 401 it can read instead of a
// handshake failure (as upstream), and token clients are unaffected.
func (c *Credentials) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2", "http/1.1"},
		Certificates: []tls.Certificate{c.ServingCert},
		ClientAuth:   tls.RequestClientCert,
		// ClientCAs only tells clients which CA to pick a certificate
		// from; with RequestClientCert the handshake does not enforce it.
		ClientCAs: c.CAPool(),
	}
}

// IssueClientCertificate signs a client certificate for user with groups as
// its organizations, the form the client-certificate authenticator reads.
// It returns PEM-encoded certificate and PKCS#8 key.
func (c *Credentials) IssueClientCertificate(user string, groups []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, fmt.Errorf("pki: client certificate needs a user name")
	}
	kp, err := issue(c.ca, time.Now(), validity, user, groups, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	return kp.certPEM, kp.keyPEM, nil
}

// LoadCA reads a CA certificate and its PKCS#8 key from PEM files (the
// ca.crt and ca.key EnsureCredentials writes), for a signer that issues
// from the cluster CA (the csrsigning controller). It checks that the two
// belong together and that the certificate is a CA.
func LoadCA(certFile, keyFile string) (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %w", err)
	}
	kp, err := parseKeyPair(certPEM, keyPEM, certFile, keyFile)
	if err != nil {
		return nil, nil, err
	}
	if !kp.cert.IsCA {
		return nil, nil, fmt.Errorf("pki: %s is not a CA certificate", certFile)
	}
	return kp.cert, kp.key, nil
}

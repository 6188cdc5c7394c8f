package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"path/filepath"
	"time"
)

// The front-proxy CA and the client certificate the aggregation layer
// presents to extension API servers (kubeadm's front-proxy-ca and
// front-proxy-client). A separate CA, as upstream requires: extension
// servers trust any certificate it signs to assert X-Remote-User, so it
// must not be the CA that signs ordinary client certificates.
const (
	FrontProxyCACertFile     = "front-proxy-ca.crt"
	FrontProxyCAKeyFile      = "front-proxy-ca.key"
	FrontProxyClientCertFile = "front-proxy-client.crt"
	FrontProxyClientKeyFile  = "front-proxy-client.key"
	// FrontProxyClientUser is the client certificate's common name, the
	// one requestheader-allowed-names lists.
	FrontProxyClientUser = "front-proxy-client"
)

// FrontProxy is the front-proxy CA (its certificate only) and the client
// certificate it signed.
type FrontProxy struct {
	CACert *x509.Certificate
	CAPEM  []byte
	// Client is the certificate and key the proxy presents.
	Client tls.Certificate
	// ClientCertPEM and ClientKeyPEM are Client's PEM encodings.
	ClientCertPEM, ClientKeyPEM []byte
}

// EnsureFrontProxy loads the front-proxy CA and client certificate in
// dir, creating the CA when missing (never replacing one) and issuing the
// client certificate when missing, not signed by the CA or expiring
// within 30 days.
func EnsureFrontProxy(dir string) (*FrontProxy, error) {
	now := time.Now()
	ca, err := ensureCAFiles(filepath.Join(dir, FrontProxyCACertFile), filepath.Join(dir, FrontProxyCAKeyFile), "myriad-front-proxy-ca", now, 10*365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	certFile, keyFile := filepath.Join(dir, FrontProxyClientCertFile), filepath.Join(dir, FrontProxyClientKeyFile)
	kp := loadServing(certFile, keyFile)
	if kp == nil || kp.cert.CheckSignatureFrom(ca.cert) != nil || kp.cert.Subject.CommonName != FrontProxyClientUser ||
		!now.Add(30*24*time.Hour).Before(kp.cert.NotAfter) {
		if kp, err = issue(ca, now, 365*24*time.Hour, FrontProxyClientUser, nil, x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(keyFile, kp.keyPEM, 0o600); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
		if err := writeFileAtomic(certFile, kp.certPEM, 0o644); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
	}
	client, err := tls.X509KeyPair(kp.certPEM, kp.keyPEM)
	if err != nil {
		return nil, fmt.Errorf("pki: front-proxy client key pair: %w", err)
	}
	client.Leaf = kp.cert
	return &FrontProxy{CACert: ca.cert, CAPEM: ca.certPEM, Client: client, ClientCertPEM: kp.certPEM, ClientKeyPEM: kp.keyPEM}, nil
}

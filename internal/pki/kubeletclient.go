package pki

import (
	"crypto/x509"
	"fmt"
	"path/filepath"
	"time"
)

// The API server's client certificate for kubelets (upstream kubeadm's
// apiserver-kubelet-client): what it presents to a kubelet for logs,
// exec, port-forward and nodes/proxy.
const (
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
	// KubeletClientUser is its common name, kubeadm's.
	KubeletClientUser = "kube-apiserver-kubelet-client"
)

// EnsureKubeletClient returns the paths of the API server's kubelet client
// certificate and key in c.Dir, issuing them from the CA when missing, not
// signed by the CA, or expiring within renewBefore (default 30 days). It
// is a client certificate for KubeletClientUser with no groups: kubelets
// authorize it through SubjectAccessReview, so it needs a binding to
// system:kubelet-api-admin (apiserver.KubeletConfig.ClientUser).
func (c *Credentials) EnsureKubeletClient(renewBefore time.Duration) (certFile, keyFile string, err error) {
	if renewBefore <= 0 {
		renewBefore = 30 * 24 * time.Hour
	}
	certFile, keyFile = filepath.Join(c.Dir, KubeletClientCertFile), filepath.Join(c.Dir, KubeletClientKeyFile)
	now := time.Now()
	if kp := loadServing(certFile, keyFile); kp != nil &&
		kp.cert.CheckSignatureFrom(c.CACert) == nil &&
		kp.cert.Subject.CommonName == KubeletClientUser &&
		now.Add(renewBefore).Before(kp.cert.NotAfter) {
		return certFile, keyFile, nil
	}
	kp, err := issue(c.ca, now, 365*24*time.Hour, KubeletClientUser, nil, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return "", "", err
	}
	if err := writeFileAtomic(keyFile, kp.keyPEM, 0o600); err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	if err := writeFileAtomic(certFile, kp.certPEM, 0o644); err != nil {
		return "", "", fmt.Errorf("pki: %w", err)
	}
	return certFile, keyFile, nil
}

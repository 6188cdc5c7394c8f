package authn

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ClientCertAuthenticator accepts TLS client certificates issued by a
// trusted CA: the subject's CommonName is the user name and its
// Organizations are the groups, as upstream. Safe for concurrent use.
//
// The chain is verified here rather than in the TLS handshake (the server
// only requests certificates; see pki.Credentials.TLSConfig) so a bad
// certificate yields a readable 401 and tokens keep working over the same
// listener.
type ClientCertAuthenticator struct {
	roots *x509.CertPool
	now   func() time.Time
}

// NewClientCertAuthenticator trusts certificates chaining to roots (in
// Myriad, pki.Credentials.CAPool()).
func NewClientCertAuthenticator(roots *x509.CertPool) *ClientCertAuthenticator {
	return &ClientCertAuthenticator{roots: roots, now: time.Now}
}

// AuthenticateRequest implements Authenticator.
func (a *ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   a.now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("client certificate has no common name")
	}
	return withAuthenticatedGroup(&request.User{
		Name:   leaf.Subject.CommonName,
		Groups: leaf.Subject.Organization,
	}), true, nil
}

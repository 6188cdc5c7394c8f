package authn

import (
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
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
//
// Successful verifications are cached by certificate digest: verifying a
// chain costs ~70µs of ECDSA, and at 10,000 nodes each renewing its Lease
// every 10 s that alone would be a tenth of a core. A cached entry never
// outlives the certificate's (or its chain's) NotAfter, nor certCacheTTL.
type ClientCertAuthenticator struct {
	roots *x509.CertPool
	now   func() time.Time

	mu struct {
		sync.Mutex
		verified map[[sha256.Size]byte]certCacheEntry
	}
}

type certCacheEntry struct {
	user    *request.User
	expires time.Time
}

const (
	// certCacheTTL bounds how long a verification is trusted, so a change
	// of trust (a future CA rotation) takes effect within it.
	certCacheTTL = 5 * time.Minute
	// certCacheMax bounds the cache's memory; when full it is emptied,
	// which only costs re-verification.
	certCacheMax = 16384
)

// NewClientCertAuthenticator trusts certificates chaining to roots (in
// Myriad, pki.Credentials.CAPool()).
func NewClientCertAuthenticator(roots *x509.CertPool) *ClientCertAuthenticator {
	a := &ClientCertAuthenticator{roots: roots, now: time.Now}
	a.mu.verified = make(map[[sha256.Size]byte]certCacheEntry)
	return a
}

// AuthenticateRequest implements Authenticator.
func (a *ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	now := a.now()
	digest := sha256.Sum256(leaf.Raw)
	if u, ok := a.cached(digest, now); ok {
		return u, true, nil
	}
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := leaf.Verify(opts)
	if err != nil {
		return nil, false, fmt.Errorf("verifying client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.New("client certificate has no common name")
	}
	u := withAuthenticatedGroup(&request.User{
		Name:   leaf.Subject.CommonName,
		Groups: leaf.Subject.Organization,
	})
	expires := now.Add(certCacheTTL)
	for _, c := range chains[0] {
		if c.NotAfter.Before(expires) {
			expires = c.NotAfter
		}
	}
	a.store(digest, certCacheEntry{user: u, expires: expires})
	return u, true, nil
}

func (a *ClientCertAuthenticator) cached(digest [sha256.Size]byte, now time.Time) (*request.User, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.mu.verified[digest]
	if !ok {
		return nil, false
	}
	if !now.Before(e.expires) {
		delete(a.mu.verified, digest)
		return nil, false
	}
	return e.user, true
}

func (a *ClientCertAuthenticator) store(digest [sha256.Size]byte, e certCacheEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.mu.verified) >= certCacheMax {
		clear(a.mu.verified)
	}
	a.mu.verified[digest] = e
}

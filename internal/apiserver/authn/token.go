package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ErrInvalidToken is returned for a bearer token no authenticator knows.
var ErrInvalidToken = errors.New("invalid bearer token")

// TokenAuthenticator accepts a fixed set of bearer tokens. Immutable after
// construction; safe for concurrent use.
type TokenAuthenticator struct {
	entries []tokenEntry
}

type tokenEntry struct {
	// Tokens are kept and compared as SHA-256 digests: fixed length, so
	// the comparison's time depends on neither the token's length nor how
	// much of it matches.
	digest [sha256.Size]byte
	user   *request.User
}

// NewTokenAuthenticator accepts each token in tokens as its user.
// system:authenticated is added to every user's groups.
func NewTokenAuthenticator(tokens map[string]*request.User) *TokenAuthenticator {
	a := &TokenAuthenticator{}
	for tok, u := range tokens {
		if tok == "" || u == nil {
			continue
		}
		a.entries = append(a.entries, tokenEntry{digest: sha256.Sum256([]byte(tok)), user: withAuthenticatedGroup(u)})
	}
	return a
}

// NewAdminTokenAuthenticator accepts token as system:admin in
// system:masters, the identity of the kubeconfig pki writes.
func NewAdminTokenAuthenticator(token string) *TokenAuthenticator {
	return NewTokenAuthenticator(map[string]*request.User{
		token: {Name: request.AdminUser, Groups: []string{request.GroupMasters, request.GroupAuthenticated}},
	})
}

// AuthenticateRequest implements Authenticator for "Authorization: Bearer
// TOKEN". On success the Authorization header is removed so that nothing
// downstream (a proxy subresource, a log line) can pass the token on.
func (a *TokenAuthenticator) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	digest := sha256.Sum256([]byte(token))
	var found *request.User
	// Compare against every entry, without stopping at a match, so the
	// time taken says nothing about which token (if any) matched.
	for i := range a.entries {
		if subtle.ConstantTimeCompare(digest[:], a.entries[i].digest[:]) == 1 {
			found = a.entries[i].user
		}
	}
	if found == nil {
		return nil, false, ErrInvalidToken
	}
	r.Header.Del("Authorization")
	return found, true, nil
}

// bearerToken extracts the token of an "Authorization: Bearer TOKEN"
// header, accepting the scheme in any case as upstream does.
func bearerToken(r *http.Request) (string, bool) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

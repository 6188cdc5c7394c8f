package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ErrInvalidToken is returned for a bearer token no token authenticator
// accepts.
var ErrInvalidToken = errors.New("invalid bearer token")

// TokenResponse is a token authenticator's verdict on an accepted token.
type TokenResponse struct {
	User *request.User
	// Audiences are the audiences the token is valid for among those the
	// caller asked about (TokenReview's spec.audiences) or, when it asked
	// about none, among the API server's own. Empty for tokens without
	// audiences (static tokens), which every audience accepts.
	Audiences []string
}

// TokenAuthenticator checks a bearer token, as upstream's
// authenticator.Token. It returns (response, true, nil) for a token it
// accepts; (nil, false, nil) for a token that is not of its kind (a static
// token for the JWT authenticator), so the next may try; (nil, false, err)
// for one of its kind that is invalid (expired, tampered, wrong audience,
// bound to a deleted pod). audiences nil means the API server's own.
// Implementations must be safe for concurrent use.
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string, audiences []string) (*TokenResponse, bool, error)
}

// TokenAuthenticatorFunc adapts a function to TokenAuthenticator.
type TokenAuthenticatorFunc func(ctx context.Context, token string, audiences []string) (*TokenResponse, bool, error)

// AuthenticateToken calls f.
func (f TokenAuthenticatorFunc) AuthenticateToken(ctx context.Context, token string, audiences []string) (*TokenResponse, bool, error) {
	return f(ctx, token, audiences)
}

// TokenUnion tries each token authenticator in order and returns the first
// that accepts; if none does, the errors of those that rejected the token.
func TokenUnion(auths ...TokenAuthenticator) TokenAuthenticator {
	return TokenAuthenticatorFunc(func(ctx context.Context, token string, audiences []string) (*TokenResponse, bool, error) {
		var errs []error
		for _, a := range auths {
			resp, ok, err := a.AuthenticateToken(ctx, token, audiences)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return resp, true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// BearerToken authenticates requests by their "Authorization: Bearer"
// header with tokens, and removes the header from an accepted request so
// it goes no further (a proxied request must not carry the caller's
// token). A bearer token no authenticator knows is an error
// (ErrInvalidToken when none says why), never anonymous.
func BearerToken(tokens TokenAuthenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*request.User, bool, error) {
		token, ok := bearerToken(r)
		if !ok {
			return nil, false, nil
		}
		resp, ok, err := tokens.AuthenticateToken(r.Context(), token, nil)
		if !ok {
			if err == nil {
				err = ErrInvalidToken
			}
			return nil, false, err
		}
		r.Header.Del("Authorization")
		return withAuthenticatedGroup(resp.User), true, nil
	})
}

// StaticTokens accepts a fixed set of bearer tokens (upstream's
// --token-auth-file, and the admin token). Tokens are compared by SHA-256
// digest in constant time.
type StaticTokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	digest [sha256.Size]byte
	user   *request.User
}

// NewStaticTokens accepts each token in tokens as its user (who also gets
// system:authenticated). Empty tokens and nil users are skipped.
func NewStaticTokens(tokens map[string]*request.User) *StaticTokens {
	a := &StaticTokens{}
	for tok, u := range tokens {
		if tok == "" || u == nil {
			continue
		}
		a.entries = append(a.entries, tokenEntry{digest: sha256.Sum256([]byte(tok)), user: withAuthenticatedGroup(u)})
	}
	return a
}

// NewAdminToken accepts token as system:admin in system:masters.
func NewAdminToken(token string) *StaticTokens {
	return NewStaticTokens(map[string]*request.User{
		token: {Name: request.AdminUser, Groups: []string{request.GroupMasters, request.GroupAuthenticated}},
	})
}

// AuthenticateToken implements TokenAuthenticator. Every entry is compared
// so the time taken does not say which matched. An unknown token is not
// an error: another token authenticator may know it.
func (a *StaticTokens) AuthenticateToken(_ context.Context, token string, _ []string) (*TokenResponse, bool, error) {
	digest := sha256.Sum256([]byte(token))
	var found *request.User
	for i := range a.entries {
		if subtle.ConstantTimeCompare(digest[:], a.entries[i].digest[:]) == 1 {
			found = a.entries[i].user
		}
	}
	if found == nil {
		return nil, false, nil
	}
	return &TokenResponse{User: found}, true, nil
}

func bearerToken(r *http.Request) (string, bool) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

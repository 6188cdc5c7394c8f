package authn

import (
	"errors"
	"net/http"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Authenticator establishes the identity behind a request.
//
// It returns (user, true, nil) when the request carries credentials it
// accepts; (nil, false, nil) when the request carries none of the kind it
// understands, so the next authenticator may try; and (nil, false, err) when
// it carries such credentials but they are invalid (wrong token, expired or
// foreign certificate). Implementations must be safe for concurrent use and
// must not read the request body.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (*request.User, bool, error)
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(r *http.Request) (*request.User, bool, error)

// AuthenticateRequest calls f(r).
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*request.User, bool, error) {
	return f(r)
}

// Union tries each authenticator in order and returns the first success.
// Errors do not stop the search — a request with a valid client certificate
// and a stale token is authenticated by the certificate — but if nothing
// succeeds, the errors are returned so the request is refused rather than
// treated as anonymous.
func Union(auths ...Authenticator) Authenticator {
	return AuthenticatorFunc(func(r *http.Request) (*request.User, bool, error) {
		var errs []error
		for _, a := range auths {
			u, ok, err := a.AuthenticateRequest(r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if ok {
				return u, true, nil
			}
		}
		return nil, false, errors.Join(errs...)
	})
}

// withAuthenticatedGroup returns u with system:authenticated added, as
// every authenticated identity carries it upstream.
func withAuthenticatedGroup(u *request.User) *request.User {
	if u.InGroup(request.GroupAuthenticated) {
		return u
	}
	out := *u
	out.Groups = append(append(make([]string, 0, len(u.Groups)+1), u.Groups...), request.GroupAuthenticated)
	return &out
}

package authn

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// FromUpstreamToken adapts one of k8s.io/apiserver's token authenticators
// (OIDC, webhook, their cache) to TokenAuthenticator. This is the one
// place upstream's authenticator.Token and user.Info meet Myriad's types.
//
// Upstream passes the audiences to check on the context; an empty list
// there means the authenticator's own implicit audiences, which is what
// nil means here.
func FromUpstreamToken(a authenticator.Token) TokenAuthenticator {
	return TokenAuthenticatorFunc(func(ctx context.Context, token string, audiences []string) (*TokenResponse, bool, error) {
		if len(audiences) > 0 {
			ctx = authenticator.WithAudiences(ctx, audiences)
		}
		resp, ok, err := a.AuthenticateToken(ctx, token)
		if !ok || err != nil || resp == nil || resp.User == nil {
			return nil, false, err
		}
		return &TokenResponse{User: FromUpstreamUser(resp.User), Audiences: resp.Audiences}, true, nil
	})
}

// FromUpstreamUser converts upstream's user.Info to a request.User.
func FromUpstreamUser(u user.Info) *request.User {
	return &request.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// ToUpstreamUser converts u to upstream's user.Info, for the upstream
// libraries (audit) that take one.
func ToUpstreamUser(u *request.User) user.Info {
	if u == nil {
		return nil
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

package controlplane

import (
	"context"
	"fmt"

	"github.com/myriad-k8s/myriad/internal/apiserver/audit"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authnconfig"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// security holds what the authentication and audit flags build for the
// chain, and closes it at shutdown.
type security struct {
	authn   *authnconfig.Authenticators
	auditor *audit.Auditor
	// tokens accepts every bearer token the server does: the admin
	// token, ServiceAccount tokens (once addServiceAccountTokens), then the
	// token file, JWT issuers and webhook. TokenReview answers with it.
	tokens authn.TokenAuthenticator
	// admin is the admin token's authenticator.
	admin authn.TokenAuthenticator
	// bootstrap accepts bootstrap tokens (--enable-bootstrap-token-auth);
	// nil when off. Set before addServiceAccountTokens.
	bootstrap authn.TokenAuthenticator
}

func newSecurity(ctx context.Context, cfg Config, creds *pki.Credentials) (*security, error) {
	a, err := authnconfig.Build(ctx, cfg.Authentication)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	aud, err := audit.New(cfg.Audit)
	if err != nil {
		a.Close()
		return nil, err
	}
	admin := authn.NewAdminToken(creds.Token)
	sec := &security{authn: a, auditor: aud, admin: admin}
	sec.addServiceAccountTokens(nil)
	return sec, nil
}

// addServiceAccountTokens puts the ServiceAccount token authenticator
// (built once the API server it reads exists) after the admin token and
// before the configured ones, as upstream orders them; nil: none.
//
// extra are further authenticators tried right after the admin token (the
// in-process components' loopback tokens).
func (s *security) addServiceAccountTokens(sa authn.TokenAuthenticator, extra ...authn.TokenAuthenticator) {
	tokens := append([]authn.TokenAuthenticator{s.admin}, extra...)
	if sa != nil {
		tokens = append(tokens, sa)
	}
	if s.bootstrap != nil {
		tokens = append(tokens, s.bootstrap)
	}
	if s.authn.Tokens != nil {
		tokens = append(tokens, s.authn.Tokens)
	}
	s.tokens = authn.TokenUnion(tokens...)
}

// Close flushes the audit log and stops the JWT authenticators.
func (s *security) Close() error {
	s.authn.Close()
	return s.auditor.Close()
}

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
	// token, then the token file, JWT issuers and webhook. TokenReview
	// answers with it.
	tokens authn.TokenAuthenticator
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
	tokens := authn.TokenAuthenticator(authn.NewAdminToken(creds.Token))
	if a.Tokens != nil {
		tokens = authn.TokenUnion(tokens, a.Tokens)
	}
	return &security{authn: a, auditor: aud, tokens: tokens}, nil
}

// Close flushes the audit log and stops the JWT authenticators.
func (s *security) Close() error {
	s.authn.Close()
	return s.auditor.Close()
}

package controlplane

import (
	"context"
	"fmt"

	"github.com/myriad-k8s/myriad/internal/apiserver/audit"
	"github.com/myriad-k8s/myriad/internal/apiserver/authnconfig"
)

// security holds what the authentication and audit flags build for the
// chain, and closes it at shutdown.
type security struct {
	authn   *authnconfig.Authenticators
	auditor *audit.Auditor
}

func newSecurity(ctx context.Context, cfg Config) (*security, error) {
	a, err := authnconfig.Build(ctx, cfg.Authentication)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	aud, err := audit.New(cfg.Audit)
	if err != nil {
		a.Close()
		return nil, err
	}
	return &security{authn: a, auditor: aud}, nil
}

// Close flushes the audit log and stops the JWT authenticators.
func (s *security) Close() error {
	s.authn.Close()
	return s.auditor.Close()
}

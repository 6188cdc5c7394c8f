package controlplane

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// maxRequestTimeout bounds non-long-running requests, as upstream's
// --request-timeout default.
const maxRequestTimeout = 60 * time.Second

// buildChain wraps h in the request filters, outermost first, in the order
// package filters documents.
func buildChain(h http.Handler, cfg Config, creds *pki.Credentials, saTokens authn.TokenAuthenticator, metrics prometheus.Registerer, log *slog.Logger) (http.Handler, error) {
	withMetrics, err := filters.WithMetrics(filters.MetricsConfig{Registerer: metrics})
	if err != nil {
		return nil, err
	}
	withInflight, err := filters.WithMaxInFlight(filters.MaxInFlightConfig{
		MaxRequestsInFlight:         cfg.MaxRequestsInflight,
		MaxMutatingRequestsInFlight: cfg.MaxMutatingRequestsInflight,
		Registerer:                  metrics,
	})
	if err != nil {
		return nil, err
	}
	tokens := authn.TokenUnion(authn.NewAdminToken(creds.Token), saTokens)
	auth := authn.Union(authn.BearerToken(tokens), authn.NewClientCertAuthenticator(creds.CAPool()))
	return filters.Chain(h,
		filters.WithWriteStack,
		filters.WithPanicRecovery(log),
		filters.WithRequestInfo,
		withMetrics,
		filters.WithLogging(log),
		filters.WithRequestDeadline(maxRequestTimeout),
		filters.WithBodyLimit(cfg.MaxRequestBodyBytes),
		authn.WithAuthentication(auth, authn.Config{Logger: log}),
		withInflight,
		// RBAC and the Node authorizer come later; the Authorizer sits in
		// the path now so they slot in without touching handlers.
		authz.WithAuthorization(authz.AlwaysAllow(), log),
	), nil
}

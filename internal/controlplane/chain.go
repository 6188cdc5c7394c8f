package controlplane

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/myriad-k8s/myriad/internal/apiserver/audit"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/impersonation"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// maxRequestTimeout bounds non-long-running requests, as upstream's
// --request-timeout default.
const maxRequestTimeout = 60 * time.Second

// buildChain wraps h in the request filters, outermost first, in the order
// package filters documents.
//
// sec holds the token authenticators, audit and authentication options; az
// is the authorizer: the same ones the review APIs answer with.
//
// apf, when not nil, is API Priority and Fairness, which takes the
// max-in-flight filter's place.
func buildChain(h http.Handler, cfg Config, creds *pki.Credentials, sec *security, az authz.Authorizer, apf filters.Filter, metrics prometheus.Registerer, log *slog.Logger) (http.Handler, error) {
	withMetrics, err := filters.WithMetrics(filters.MetricsConfig{Registerer: metrics})
	if err != nil {
		return nil, err
	}
	withInflight := apf
	if withInflight == nil {
		if withInflight, err = filters.WithMaxInFlight(filters.MaxInFlightConfig{
			MaxRequestsInFlight:         cfg.MaxRequestsInflight,
			MaxMutatingRequestsInFlight: cfg.MaxMutatingRequestsInflight,
			Registerer:                  metrics,
		}); err != nil {
			return nil, err
		}
	}
	// Client certificates first, then bearer tokens, as upstream orders them:
	// a request carrying both is its certificate's.
	auth := authn.Union(authn.NewClientCertAuthenticator(creds.CAPool()), authn.BearerToken(sec.tokens))
	return filters.Chain(h,
		filters.WithWriteStack,
		filters.WithPanicRecovery(log),
		audit.WithAuditID,
		filters.WithRequestInfo,
		filters.WithProbabilisticGoaway(filters.GoawayConfig{Chance: cfg.GoawayChance}),
		withMetrics,
		filters.WithLogging(log),
		filters.WithRequestDeadline(maxRequestTimeout),
		filters.WithBodyLimit(cfg.MaxRequestBodyBytes),
		sec.auditor.WithFailedAuthenticationAudit(),
		authn.WithAuthentication(auth, authn.Config{Logger: log, PublicPaths: sec.authn.PublicPaths}),
		sec.auditor.WithAudit(),
		impersonation.WithImpersonation(az, log),
		withInflight,
		authz.WithAuthorization(az, log),
	), nil
}

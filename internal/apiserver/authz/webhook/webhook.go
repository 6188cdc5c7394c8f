package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	upstream "k8s.io/apiserver/plugin/pkg/authorizer/webhook"
	"k8s.io/apiserver/plugin/pkg/authorizer/webhook/metrics"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Config configures the webhook authorizer. Defaults are kube-apiserver's.
type Config struct {
	// KubeconfigFile names the webhook service (clusters[].cluster.server,
	// its CA) and this server's credentials towards it (users[].user), in
	// kubeconfig format. Required.
	KubeconfigFile string
	// AuthorizedTTL is how long an "allowed" answer is cached (default
	// 5 minutes, --authorization-webhook-cache-authorized-ttl).
	AuthorizedTTL time.Duration
	// UnauthorizedTTL is how long a "not allowed" answer is cached
	// (default 30 seconds, --authorization-webhook-cache-unauthorized-ttl).
	UnauthorizedTTL time.Duration
	// RetryBackoff governs retries of a failed call (default upstream's:
	// 5 steps from 500 ms, doubling). Tests shorten it.
	RetryBackoff *Backoff
}

// Backoff is the retry schedule of failed webhook calls.
type Backoff struct {
	Initial time.Duration
	Factor  float64
	Steps   int
}

// Authorizer implements authz.Authorizer and authz.RuleResolver.
type Authorizer struct {
	w *upstream.WebhookAuthorizer
}

var (
	_ authz.Authorizer   = (*Authorizer)(nil)
	_ authz.RuleResolver = (*Authorizer)(nil)
)

// New reads the kubeconfig and returns the authorizer. A failed call
// (unreachable service, error status, undecodable answer) yields
// NoOpinion with the error, upstream's default failure policy, so a later
// authorizer in the union may still decide; on its own the request is
// refused.
func New(cfg Config) (*Authorizer, error) {
	if cfg.KubeconfigFile == "" {
		return nil, errors.New("webhook authorizer: a kubeconfig file is required")
	}
	if cfg.AuthorizedTTL == 0 {
		cfg.AuthorizedTTL = 5 * time.Minute
	}
	if cfg.UnauthorizedTTL == 0 {
		cfg.UnauthorizedTTL = 30 * time.Second
	}
	backoff := *upstream.DefaultRetryBackoff()
	if b := cfg.RetryBackoff; b != nil {
		backoff.Duration, backoff.Factor, backoff.Steps = b.Initial, b.Factor, b.Steps
	}
	rc, err := webhookutil.LoadKubeconfig(cfg.KubeconfigFile, nil)
	if err != nil {
		return nil, fmt.Errorf("webhook authorizer: loading %s: %w", cfg.KubeconfigFile, err)
	}
	w, err := upstream.New(rc, "v1", cfg.AuthorizedTTL, cfg.UnauthorizedTTL, backoff,
		authorizer.DecisionNoOpinion, nil, "webhook", metrics.NoopAuthorizerMetrics{}, nil)
	if err != nil {
		return nil, fmt.Errorf("webhook authorizer: %w", err)
	}
	return &Authorizer{w: w}, nil
}

// Authorize asks the webhook (or its cache) about a.
func (a *Authorizer) Authorize(ctx context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	d, reason, err := a.w.Authorize(ctx, attributesRecord(attrs))
	return decision(d), reason, err
}

// RulesFor reports an incomplete, empty list: a webhook cannot enumerate
// what it would allow (upstream's answer too).
func (a *Authorizer) RulesFor(context.Context, *request.User, string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	return nil, nil, true, nil
}

func attributesRecord(a authz.Attributes) authorizer.AttributesRecord {
	rec := authorizer.AttributesRecord{
		Verb: a.Verb, Namespace: a.Namespace, APIGroup: a.APIGroup, APIVersion: a.APIVersion,
		Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		ResourceRequest: a.IsResourceRequest, Path: a.Path,
	}
	if u := a.User; u != nil {
		rec.User = &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
	}
	return rec
}

func decision(d authorizer.Decision) authz.Decision {
	switch d {
	case authorizer.DecisionAllow:
		return authz.DecisionAllow
	case authorizer.DecisionDeny:
		return authz.DecisionDeny
	}
	return authz.DecisionNoOpinion
}

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/node"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/rbac"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/webhook"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Authorization modes, spelled as upstream's --authorization-mode.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
	ModeWebhook     = "Webhook"
)

// DefaultAuthorizationModes is --authorization-mode's default, upstream's.
const DefaultAuthorizationModes = ModeNode + "," + ModeRBAC

// AuthorizationConfig selects and configures the authorizers. Zero values
// take the stated defaults.
type AuthorizationConfig struct {
	// Modes are asked in order after system:masters, which is always
	// allowed first, as upstream; the first Allow or Deny decides
	// (default DefaultAuthorizationModes).
	Modes []string
	// WebhookConfigFile is the kubeconfig of the Webhook mode's service;
	// required with Webhook and refused without it.
	WebhookConfigFile string
	// WebhookCacheAuthorizedTTL (default 5 minutes) and
	// WebhookCacheUnauthorizedTTL (default 30 seconds) are how long the
	// webhook's answers are cached.
	WebhookCacheAuthorizedTTL   time.Duration
	WebhookCacheUnauthorizedTTL time.Duration
}

// authorizerDeps is what a mode's constructor may build from. It runs
// after apiserver.New and before Start: the API's objects are read
// through api.ListerWatcher and api.GetObject (the watch caches, no
// HTTP), and an authorizer whose index must be complete before the server
// answers registers api.AddReadinessCheck.
type authorizerDeps struct {
	// ctx ends when the control plane shuts down: informers an authorizer
	// starts run until then.
	ctx context.Context
	api *apiserver.Server
	cfg AuthorizationConfig
	log *slog.Logger
}

// mode is one built authorization mode.
type mode struct {
	authorizer authz.Authorizer
	// rules lists what authorizer allows (SelfSubjectRulesReview); nil
	// when it cannot say.
	rules authz.RuleResolver
	// stop, if set, ends what the constructor started (informers) and
	// waits for it; it runs at shutdown, before the API server stops.
	stop func()
}

// modeConstructor builds one mode. For example, RBAC (main's
// internal/apiserver/authz/rbac) would be
//
//	a, err := rbac.New(d.api.ListerWatcher, rbac.Options{Logger: d.log})
//	... a.Start(d.ctx); d.api.AddReadinessCheck("rbac", a.HasSynced)
//	return mode{authorizer: a, rules: a, stop: a.Stop}, nil
type modeConstructor func(d authorizerDeps) (mode, error)

// authorizationModes maps every mode name upstream knows to its
// constructor; nil marks a mode this build cannot build yet.
func authorizationModes() map[string]modeConstructor {
	return map[string]modeConstructor{
		ModeAlwaysAllow: func(authorizerDeps) (mode, error) {
			return mode{authorizer: authz.AlwaysAllow(), rules: authz.AlwaysAllowRules()}, nil
		},
		ModeAlwaysDeny: func(authorizerDeps) (mode, error) {
			return mode{authorizer: authz.AlwaysDeny(), rules: authz.NoRules()}, nil
		},
		ModeWebhook: newWebhookMode,
		ModeNode:    newNodeMode,
		ModeRBAC:    newRBACMode,
	}
}

// newNodeMode builds the Node authorizer over the server's caches; its
// graph must be complete before the server reports ready.
func newNodeMode(d authorizerDeps) (mode, error) {
	a, err := node.New(d.api, node.Config{Logger: d.log.With("mode", ModeNode)})
	if err != nil {
		return mode{}, err
	}
	a.Start(d.ctx)
	return mode{authorizer: a, rules: a, stop: a.Stop}, nil
}

// newRBACMode builds the RBAC authorizer over the server's caches; its
// index must be complete before the server reports ready.
func newRBACMode(d authorizerDeps) (mode, error) {
	a, err := rbac.New(d.api.ListerWatcher, rbac.Options{Logger: d.log.With("mode", ModeRBAC)})
	if err != nil {
		return mode{}, err
	}
	if err := a.Start(d.ctx); err != nil {
		return mode{}, err
	}
	d.api.AddReadinessCheck("rbac", a.HasSynced)
	return mode{authorizer: a, rules: a, stop: a.Stop}, nil
}

func newWebhookMode(d authorizerDeps) (mode, error) {
	w, err := webhook.New(webhook.Config{
		KubeconfigFile:  d.cfg.WebhookConfigFile,
		AuthorizedTTL:   d.cfg.WebhookCacheAuthorizedTTL,
		UnauthorizedTTL: d.cfg.WebhookCacheUnauthorizedTTL,
	})
	if err != nil {
		return mode{}, err
	}
	return mode{authorizer: w, rules: w}, nil
}

// ParseAuthorizationModes splits a --authorization-mode value.
func ParseAuthorizationModes(v string) []string {
	return splitComma(v)
}

func splitComma(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// validateAuthorization checks cfg as upstream's authorization options
// do, with upstream's messages, so a mistake stops the start.
func validateAuthorization(cfg AuthorizationConfig, known map[string]modeConstructor) error {
	if len(cfg.Modes) == 0 {
		return errors.New("at least one authorization-mode must be passed")
	}
	var errs []error
	seen := map[string]bool{}
	for _, m := range cfg.Modes {
		build, ok := known[m]
		switch {
		case !ok:
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			sort.Strings(names)
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode (valid: %s)", m, strings.Join(names, ", ")))
		case seen[m]:
			errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", strings.Join(cfg.Modes, ",")))
		case build == nil:
			errs = append(errs, fmt.Errorf("authorization-mode %q is not available in this build yet", m))
		}
		seen[m] = true
	}
	if seen[ModeWebhook] && cfg.WebhookConfigFile == "" {
		errs = append(errs, errors.New("authorization-mode Webhook's authorization config file not passed"))
	}
	if !seen[ModeWebhook] && cfg.WebhookConfigFile != "" {
		errs = append(errs, errors.New("cannot specify --authorization-webhook-config-file without mode Webhook"))
	}
	if cfg.WebhookCacheAuthorizedTTL < 0 || cfg.WebhookCacheUnauthorizedTTL < 0 {
		errs = append(errs, errors.New("--authorization-webhook-cache-*-ttl must not be negative"))
	}
	return errors.Join(errs...)
}

// buildAuthorizer returns the authorizer the filter chain and the review
// APIs share — system:masters first, then each mode in order — the union
// of the modes' rule resolvers, and stop, which ends what the modes
// started (call it before the API server stops; it is never nil).
func buildAuthorizer(d authorizerDeps) (az authz.Authorizer, rules authz.RuleResolver, stop func(), err error) {
	return buildAuthorizerFrom(d, authorizationModes())
}

// buildAuthorizerFrom is buildAuthorizer with the constructors given.
func buildAuthorizerFrom(d authorizerDeps, known map[string]modeConstructor) (az authz.Authorizer, rules authz.RuleResolver, stop func(), err error) {
	if len(d.cfg.Modes) == 0 {
		d.cfg.Modes = ParseAuthorizationModes(DefaultAuthorizationModes)
	}
	if err := validateAuthorization(d.cfg, known); err != nil {
		return nil, nil, func() {}, err
	}
	authorizers := []authz.Authorizer{authz.PrivilegedGroups(request.GroupMasters)}
	var resolvers []authz.RuleResolver
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, name := range d.cfg.Modes {
		m, err := known[name](d)
		if err != nil {
			stop()
			return nil, nil, func() {}, fmt.Errorf("authorization mode %s: %w", name, err)
		}
		authorizers = append(authorizers, m.authorizer)
		if m.rules != nil {
			resolvers = append(resolvers, m.rules)
		}
		if m.stop != nil {
			stops = append(stops, m.stop)
		}
	}
	return authz.Union(authorizers...), authz.RuleResolverUnion(resolvers...), stop, nil
}

// lateAuthorization forwards to the authorizer and rule resolver that are
// built after apiserver.New (they read the server's own caches), for the
// admission plugins New must be given: RBAC's escalation and bind check.
// Both are set before the server starts, so no request sees them unset.
type lateAuthorization struct {
	authorizer authz.Authorizer
	rules      authz.RuleResolver
}

func (l *lateAuthorization) Authorize(ctx context.Context, a authz.Attributes) (authz.Decision, string, error) {
	return l.authorizer.Authorize(ctx, a)
}

func (l *lateAuthorization) RulesFor(ctx context.Context, user *request.User, namespace string) ([]authz.ResourceRule, []authz.NonResourceRule, bool, error) {
	return l.rules.RulesFor(ctx, user, namespace)
}

package authnconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	"k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"

	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
)

// Options are the authentication flags.
type Options struct {
	// TokenAuthFile is upstream's static token CSV (--token-auth-file).
	TokenAuthFile string
	// AuthenticationConfigFile is an AuthenticationConfiguration
	// (--authentication-config).
	AuthenticationConfigFile string
	// WebhookConfigFile is a kubeconfig naming a TokenReview webhook
	// (--authentication-token-webhook-config-file).
	WebhookConfigFile string
	// WebhookCacheTTL is how long webhook verdicts are cached
	// (--authentication-token-webhook-cache-ttl); default 2 minutes.
	WebhookCacheTTL time.Duration
	// AnonymousAuth is --anonymous-auth; nil means the default, true.
	// Setting it together with an anonymous section in the
	// AuthenticationConfiguration is an error, as upstream.
	AnonymousAuth *bool
	// APIAudiences are the audiences of tokens meant for this server
	// (--api-audiences); JWT and webhook authenticators refuse tokens
	// reviewed for other audiences. Empty: no audience check beyond the
	// issuers' own.
	APIAudiences []string
	// DisallowedIssuers are issuers no JWT authenticator may claim: the
	// ServiceAccount issuers, whose tokens this server verifies itself
	// (upstream passes --service-account-issuer here).
	DisallowedIssuers []string
}

// Authenticators is what Options build.
type Authenticators struct {
	// Tokens accepts the bearer tokens of the token file, the JWT issuers
	// and the webhook, in that order; nil when none is configured.
	Tokens authn.TokenAuthenticator
	// PublicPaths is the value for authn.Config.PublicPaths: nil for the
	// default (health checks and version), empty when anonymous access is
	// disabled, the configured paths when the configuration names some.
	PublicPaths []string
	// HealthCheck reports whether every JWT issuer's keys have been
	// fetched (tokens of an issuer are refused until then).
	HealthCheck func() error

	cancel context.CancelFunc
}

// Close stops the JWT authenticators' background key refreshes.
func (a *Authenticators) Close() {
	if a != nil && a.cancel != nil {
		a.cancel()
	}
}

// Build reads the files opts names and returns the authenticators. ctx
// bounds nothing but is the parent of the JWT authenticators' lifetime,
// which Close ends.
func Build(ctx context.Context, opts Options) (*Authenticators, error) {
	ctx, cancel := context.WithCancel(ctx)
	out := &Authenticators{cancel: cancel, HealthCheck: func() error { return nil }}
	var tokens []authn.TokenAuthenticator

	if opts.TokenAuthFile != "" {
		st, err := authn.LoadTokenFile(opts.TokenAuthFile)
		if err != nil {
			cancel()
			return nil, err
		}
		tokens = append(tokens, st)
	}

	anonymous := opts.AnonymousAuth == nil || *opts.AnonymousAuth
	if opts.AuthenticationConfigFile != "" {
		cfg, err := LoadAuthenticationConfiguration(opts.AuthenticationConfigFile, opts.DisallowedIssuers)
		if err != nil {
			cancel()
			return nil, err
		}
		if cfg.Anonymous != nil {
			if opts.AnonymousAuth != nil {
				cancel()
				return nil, errors.New("--anonymous-auth cannot be set when the anonymous section is in the authentication configuration file")
			}
			anonymous = cfg.Anonymous.Enabled
			if anonymous && len(cfg.Anonymous.Conditions) > 0 {
				out.PublicPaths = make([]string, 0, len(cfg.Anonymous.Conditions))
				for _, c := range cfg.Anonymous.Conditions {
					out.PublicPaths = append(out.PublicPaths, c.Path)
				}
			}
		}
		if len(cfg.JWT) > 0 {
			jwt, health, err := jwtAuthenticators(ctx, cfg, opts.APIAudiences)
			if err != nil {
				cancel()
				return nil, err
			}
			tokens = append(tokens, jwt)
			out.HealthCheck = health
		}
	}
	if !anonymous {
		out.PublicPaths = []string{}
	}

	if opts.WebhookConfigFile != "" {
		wh, err := webhookAuthenticator(opts)
		if err != nil {
			cancel()
			return nil, err
		}
		tokens = append(tokens, wh)
	}

	switch len(tokens) {
	case 0:
	case 1:
		out.Tokens = tokens[0]
	default:
		out.Tokens = authn.TokenUnion(tokens...)
	}
	return out, nil
}

// LoadAuthenticationConfiguration decodes and validates an
// AuthenticationConfiguration file with k8s.io/apiserver's scheme and
// validation (CEL expressions compiled), as kube-apiserver; no JWT issuer
// may be one of disallowedIssuers.
func LoadAuthenticationConfiguration(path string, disallowedIssuers []string) (*apiserver.AuthenticationConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("authentication config: %w", err)
	}
	cfg, err := decodeAuthenticationConfiguration(data, disallowedIssuers)
	if err != nil {
		return nil, fmt.Errorf("authentication config %s: %w", path, err)
	}
	return cfg, nil
}

func decodeAuthenticationConfiguration(data []byte, disallowedIssuers []string) (*apiserver.AuthenticationConfiguration, error) {
	if len(data) == 0 {
		return nil, errors.New("empty config data")
	}
	scheme := runtime.NewScheme()
	install.Install(scheme)
	obj, err := runtime.Decode(serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("expected AuthenticationConfiguration, got %T", obj)
	}
	if errs := validation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, disallowedIssuers); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// jwtAuthenticators builds one OIDC authenticator per issuer, as
// kube-apiserver: tried in order, the first error ends the search (a token
// of a known issuer that fails is refused, not passed on).
func jwtAuthenticators(ctx context.Context, cfg *apiserver.AuthenticationConfiguration, apiAudiences []string) (authn.TokenAuthenticator, func() error, error) {
	var auths []authenticator.Token
	var checks []func() error
	for _, j := range cfg.JWT {
		var ca oidc.CAContentProvider
		if j.Issuer.CertificateAuthority != "" {
			c, err := dynamiccertificates.NewStaticCAContent("oidc-authenticator", []byte(j.Issuer.CertificateAuthority))
			if err != nil {
				return nil, nil, fmt.Errorf("issuer %s: certificateAuthority: %w", j.Issuer.URL, err)
			}
			ca = c
		}
		a, err := oidc.New(ctx, oidc.Options{JWTAuthenticator: j, CAContentProvider: ca})
		if err != nil {
			return nil, nil, fmt.Errorf("issuer %s: %w", j.Issuer.URL, err)
		}
		auths = append(auths, a)
		checks = append(checks, a.HealthCheck)
	}
	health := func() error {
		var errs []error
		for _, c := range checks {
			errs = append(errs, c())
		}
		return errors.Join(errs...)
	}
	var t authenticator.Token = tokenunion.NewFailOnError(auths...)
	if len(apiAudiences) > 0 {
		t = authenticator.WrapAudienceAgnosticToken(apiAudiences, t)
	}
	return authn.FromUpstreamToken(t), health, nil
}

// webhookAuthenticator is kube-apiserver's: TokenReview v1 to the
// kubeconfig's server, 500ms initial retry backoff, verdicts cached for
// the TTL (failures too, as upstream).
func webhookAuthenticator(opts Options) (authn.TokenAuthenticator, error) {
	ttl := opts.WebhookCacheTTL
	if ttl == 0 {
		ttl = 2 * time.Minute
	}
	restCfg, err := webhookutil.LoadKubeconfig(opts.WebhookConfigFile, nil)
	if err != nil {
		return nil, fmt.Errorf("token webhook config: %w", err)
	}
	wh, err := webhook.New(restCfg, "v1", opts.APIAudiences, webhookutil.DefaultRetryBackoffWithInitialDelay(500*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("token webhook: %w", err)
	}
	var t authenticator.Token = wh
	if ttl > 0 {
		t = tokencache.New(wh, false, ttl, ttl)
	}
	return authn.FromUpstreamToken(t), nil
}

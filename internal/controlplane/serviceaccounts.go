package controlplane

import (
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"time"

	"github.com/myriad-k8s/myriad/internal/apiserver"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn/tokencache"
	"github.com/myriad-k8s/myriad/internal/pki"
)

// DefaultServiceAccountIssuer is the iss of tokens when
// --service-account-issuer is not given: the in-cluster name of the API
// server, as kubeadm configures.
const DefaultServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// ServiceAccountOptions configure ServiceAccount tokens; the flags are
// upstream's kube-apiserver ones.
type ServiceAccountOptions struct {
	// Issuers (--service-account-issuer, repeatable): the first is put in
	// new tokens, all are accepted. Default DefaultServiceAccountIssuer.
	Issuers []string
	// SigningKeyFile (--service-account-signing-key-file) is the PEM
	// private key tokens are signed with. Default DataDir/sa.key, created
	// on first start (package pki).
	SigningKeyFile string
	// KeyFiles (--service-account-key-file, repeatable) hold the public
	// keys tokens are verified with — the signing key's and those of
	// keys rotated out whose tokens are still in use. Default the signing
	// key's public half.
	KeyFiles []string
	// APIAudiences (--api-audiences) are the audiences the API server
	// accepts and gives tokens that ask for none. Default Issuers.
	APIAudiences []string
	// MaxTokenExpiration (--service-account-max-token-expiration) caps a
	// TokenRequest's lifetime; zero: no cap. Between 1 h and 2^32 s.
	MaxTokenExpiration time.Duration
	// DisableAdmission leaves out the ServiceAccount admission plugin
	// (--disable-admission-plugins=ServiceAccount): for an API server
	// without the serviceaccount controller, whose pods would otherwise
	// be refused for want of a "default" account, as upstream's
	// integration tests run kube-apiserver.
	DisableAdmission bool
	// JWKSURI (--service-account-jwks-uri) overrides the jwks_uri of the
	// OIDC discovery document, for relying parties that fetch the key set
	// from somewhere other than this server (an https URL). Default: this
	// server's /openid/v1/jwks.
	JWKSURI string
}

// ServiceAccountSigningKeyFile is the file tokens are signed with: the one
// the legacy token controller must sign with too (the controller
// manager's --service-account-private-key-file).
func (c Config) ServiceAccountSigningKeyFile() string {
	if c.ServiceAccounts.SigningKeyFile != "" {
		return c.ServiceAccounts.SigningKeyFile
	}
	return filepath.Join(c.DataDir, pki.ServiceAccountKeyFile)
}

// withDefaults fills in upstream's defaults: the issuer, and the API
// audiences are the issuers.
func (o ServiceAccountOptions) withDefaults() ServiceAccountOptions {
	if len(o.Issuers) == 0 {
		o.Issuers = []string{DefaultServiceAccountIssuer}
	}
	if len(o.APIAudiences) == 0 {
		o.APIAudiences = o.Issuers
	}
	return o
}

// serviceAccounts is the token machinery of one control plane.
type serviceAccounts struct {
	opts   ServiceAccountOptions
	signer *serviceaccount.Signer
	keys   []crypto.PublicKey
}

// newServiceAccounts loads (or, for the default file, creates) the
// signing key and the verification keys.
func newServiceAccounts(cfg Config) (*serviceAccounts, error) {
	o := cfg.ServiceAccounts.withDefaults()
	if m := o.MaxTokenExpiration; m != 0 && (m < time.Hour || m > (1<<32)*time.Second) {
		return nil, errors.New("--service-account-max-token-expiration must be between 1 hour and 2^32 seconds")
	}
	if o.JWKSURI != "" {
		if u, err := url.Parse(o.JWKSURI); err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("--service-account-jwks-uri %q must be an https URL", o.JWKSURI)
		}
	}
	var key crypto.Signer
	var err error
	if o.SigningKeyFile == "" {
		key, err = pki.EnsureServiceAccountKey(cfg.DataDir)
	} else {
		key, err = pki.LoadPrivateKey(o.SigningKeyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	sa := &serviceAccounts{opts: o}
	if sa.signer, err = serviceaccount.NewSigner(o.Issuers[0], key); err != nil {
		return nil, err
	}
	for _, f := range o.KeyFiles {
		keys, err := pki.LoadPublicKeys(f)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
		sa.keys = append(sa.keys, keys...)
	}
	if len(sa.keys) == 0 {
		sa.keys = []crypto.PublicKey{key.Public()}
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if !slices.ContainsFunc(sa.keys, func(k crypto.PublicKey) bool { return key.Public().(equaler).Equal(k) }) {
		// Every token this server issued would be refused by itself.
		return nil, errors.New("--service-account-key-file does not hold the public key of the signing key")
	}
	return sa, nil
}

// apiserverConfig is what the API server needs to issue tokens.
func (sa *serviceAccounts) apiserverConfig() *apiserver.ServiceAccountConfig {
	return &apiserver.ServiceAccountConfig{Signer: sa.signer, APIAudiences: sa.opts.APIAudiences, MaxExpiration: sa.opts.MaxTokenExpiration,
		DisableAdmission: sa.opts.DisableAdmission}
}

// authenticator checks bound and legacy tokens against api's caches,
// remembering successes for upstream's 10 s (package tokencache).
func (sa *serviceAccounts) authenticator(api *apiserver.Server) (authn.TokenAuthenticator, error) {
	a, err := serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers: sa.opts.Issuers, Keys: sa.keys, APIAudiences: sa.opts.APIAudiences, Legacy: true, Getter: api,
	})
	if err != nil {
		return nil, err
	}
	return tokencache.New(a, tokencache.Config{}), nil
}

// installDiscovery serves the OIDC discovery documents on mux when the
// issuer is an https URL (upstream serves them only then).
func (sa *serviceAccounts) installDiscovery(mux *http.ServeMux, serverURL string, log *slog.Logger) {
	jwksURI := sa.opts.JWKSURI
	if jwksURI == "" {
		jwksURI = serverURL + serviceaccount.JWKSPath
	}
	h, err := serviceaccount.DiscoveryHandler(sa.opts.Issuers[0], jwksURI, sa.keys)
	if err != nil {
		log.Warn("not serving service account issuer discovery", "err", err)
		return
	}
	mux.Handle(serviceaccount.OpenIDConfigurationPath, h)
	mux.Handle(serviceaccount.JWKSPath, h)
}

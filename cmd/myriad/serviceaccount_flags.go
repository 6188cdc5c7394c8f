package main

import (
	"flag"
	"fmt"

	"github.com/myriad-k8s/myriad/internal/controlplane"
)

// serviceAccountFlags are kube-apiserver's ServiceAccount token flags, by
// their upstream names.
func serviceAccountFlags(fs *flag.FlagSet, o *controlplane.ServiceAccountOptions) {
	fs.Func("service-account-issuer", "iss of ServiceAccount tokens (repeatable: the first issues, all are accepted; default "+controlplane.DefaultServiceAccountIssuer+")", func(v string) error {
		o.Issuers = append(o.Issuers, v)
		return nil
	})
	fs.StringVar(&o.SigningKeyFile, "service-account-signing-key-file", "", "PEM private key ServiceAccount tokens are signed with (default <data-dir>/sa.key, created on first start)")
	fs.Func("service-account-key-file", "PEM file of public keys ServiceAccount tokens are verified with (repeatable; default the signing key's)", func(v string) error {
		o.KeyFiles = append(o.KeyFiles, v)
		return nil
	})
	fs.Func("api-audiences", "comma-separated audiences the API accepts in tokens (default the issuers)", func(v string) error {
		o.APIAudiences = splitList(v)
		return nil
	})
	// Upstream's flag takes any plugin; only ServiceAccount can be turned
	// off so far (the other plugins run on every server).
	fs.Func("disable-admission-plugins", "comma-separated admission plugins to leave out (supported: ServiceAccount)", func(v string) error {
		for _, p := range splitList(v) {
			if p != "ServiceAccount" {
				return fmt.Errorf("admission plugin %q cannot be disabled (supported: ServiceAccount)", p)
			}
			o.DisableAdmission = true
		}
		return nil
	})
	fs.StringVar(&o.JWKSURI, "service-account-jwks-uri", "", "https URL of the JSON Web Key Set put in the OIDC discovery document (default: this server's /openid/v1/jwks)")
	fs.DurationVar(&o.MaxTokenExpiration, "service-account-max-token-expiration", 0, "longest lifetime of a token TokenRequest issues (0: no cap; else between 1h and 2^32 s)")
}

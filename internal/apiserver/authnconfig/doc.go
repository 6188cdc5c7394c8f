// Package authnconfig builds the bearer-token authenticators and the
// anonymous-access rule from the API server's authentication flags, as
// kube-apiserver's authenticator config does:
//
//   - --token-auth-file: static tokens (authn.LoadTokenFile);
//   - --authentication-config: an apiserver.config.k8s.io
//     AuthenticationConfiguration, loaded and validated with
//     k8s.io/apiserver's own types and validation; each JWT issuer becomes
//     k8s.io/apiserver's OIDC authenticator (discovery, JWKS, claim
//     mappings and CEL rules included), and its anonymous section decides
//     which paths anonymous requests may reach;
//   - --authentication-token-webhook-config-file: k8s.io/apiserver's
//     TokenReview webhook authenticator behind its cache
//     (--authentication-token-webhook-cache-ttl);
//   - --anonymous-auth.
//
// The result's Tokens are tried in upstream's order (token file, JWT
// issuers, webhook); ServiceAccount tokens and the admin token are added
// by the caller. Everything from k8s.io/apiserver reaches Myriad's types
// through authn.FromUpstreamToken.
package authnconfig

// Package serviceaccount issues and checks ServiceAccount tokens, as
// upstream's pkg/serviceaccount.
//
// A Signer makes JWTs: bound tokens (TokenRequest, the kubelet's projected
// kube-api-access volumes) carry iss, sub "system:serviceaccount:<ns>:<name>",
// aud, exp, iat, nbf, jti and the "kubernetes.io" claims naming the
// ServiceAccount and the pod, secret or node the token is bound to; legacy
// tokens (the kubernetes.io/service-account-token Secrets the token
// controller fills) carry iss "kubernetes/serviceaccount" and the
// kubernetes.io/serviceaccount/* claims and never expire.
//
// The Authenticator is an authn.TokenAuthenticator. It ignores tokens of
// other issuers (so an OIDC authenticator may take them) and rejects, with
// an error the request turns into a 401, a token of its issuers that is
// tampered with, signed by an unknown key or with an algorithm other than
// the keys', expired, not yet valid, for none of the requested audiences,
// or whose ServiceAccount, bound object or legacy Secret is gone or was
// recreated (another uid). Objects are read through a Getter — the API
// server's watch caches, with a consistent read when the cache has not seen
// an object yet, so a pod created a moment ago is found.
//
// DiscoveryHandler serves the OIDC discovery documents
// (/.well-known/openid-configuration and /openid/v1/jwks) that let other
// systems verify these tokens.
package serviceaccount

// Package authn establishes who is making a request. An Authenticator looks
// at one request's credentials; WithAuthentication runs it, puts the
// resulting request.User on the context, and answers 401 Unauthorized (a
// JSON metav1.Status, as upstream) when there is none.
//
// Authenticators, combined by Union:
//
//   - client certificates chained to the cluster CA (CN is the user, O the
//     groups) — the form kubelets and nodes use;
//   - bearer tokens (BearerToken over a TokenAuthenticator): static tokens
//     compared in constant time — the admin token from package pki and
//     upstream's --token-auth-file (ParseTokenFile) — and, built by package
//     authnconfig, k8s.io/apiserver's JWT and webhook authenticators,
//     adapted in one place (FromUpstreamToken).
//
// Requests carrying no credentials at all are let through as
// system:anonymous only on public paths (/livez, /readyz, /healthz,
// /version by default); everything else answers 401. Invalid credentials
// are a 401 even on public paths, as upstream: a client that sends a wrong
// token should learn so rather than be silently downgraded.
package authn

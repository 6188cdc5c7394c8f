// Package request turns an *http.Request into the facts every later stage of
// the API server decides on — which resource, namespace, name and verb it
// addresses (RequestInfo) and who is asking (User) — and carries both on the
// request context.
//
// Parsing follows upstream's RequestInfoFactory so that authorization, flow
// control and metrics see the same verbs and scopes as on a stock
// kube-apiserver (RBAC rules and dashboards written for upstream keep
// working). It deliberately differs in one way: paths with "." or ".."
// segments, or empty segments inside an API path, are rejected
// (ErrInvalidPath) instead of being parsed, so a crafted path can never make
// authorization look at a different namespace or resource than the handler
// serves.
//
// The package has no dependencies on the rest of the server and no state.
package request

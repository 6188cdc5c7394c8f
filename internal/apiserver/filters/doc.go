// Package filters holds the HTTP filters that run around every API request
// before it reaches a handler: panic recovery, request parsing, logging,
// metrics, request deadlines, body limits and max-in-flight limiting. Each is
// a Filter — func(http.Handler) http.Handler — so the server composes them
// with Chain and tests exercise each alone.
//
// Recommended order, outermost first (authentication and authorization live
// in the authn and authz packages but slot into the same chain):
//
//	WithPanicRecovery    turn a handler panic into a 500 Status, log it
//	WithRequestInfo      parse RequestInfo once; everything below reads it
//	WithMetrics          sees the final code of every request, 401/403/429 included
//	WithLogging          debug-level access log with user and status
//	WithRequestDeadline  context deadline for non-long-running requests
//	WithBodyLimit        413 on an oversized Content-Length before any read
//	audit.WithFailedAuthenticationAudit (audit.WithAuditID sits near the top)
//	authn.WithAuthentication
//	audit.WithAudit      policy level and stages, for the authenticated user
//	impersonation.WithImpersonation
//	WithMaxInFlight      after authn so exempt groups can be honoured
//	authz.WithAuthorization
//	handler
//
// Cancellation needs no filter: net/http cancels r.Context() when the client
// disconnects, every filter here passes that context down (adding only a
// deadline), and handlers must stop work when it is done.
//
// Filters write errors as metav1.Status JSON (WriteStatus): they run before
// content negotiation, and every Kubernetes client decodes JSON Status.
// Metrics are registered on a prometheus.Registerer passed in; the package
// has no global state.
package filters

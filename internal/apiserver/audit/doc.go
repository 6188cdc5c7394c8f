// Package audit writes upstream's audit log: one audit.k8s.io/v1 Event per
// request stage (RequestReceived, ResponseStarted for long-running
// requests, ResponseComplete, Panic) at the level the audit policy
// (--audit-policy-file) picks for the request — None, Metadata, Request
// (plus the request body) or RequestResponse (plus the response body).
//
// The machinery is k8s.io/apiserver's: its AuditContext carries the event
// through the request (so authorization annotations and impersonation land
// in it through audit.AddAuditAnnotation and audit.LogImpersonatedUser),
// its policy evaluator picks the level, and its log, buffered and webhook
// backends write the events. This package holds what is Myriad's: the
// filters that bracket authentication, the adapter from Myriad's request
// types, body capture that leaves streaming intact, and the configuration.
//
// Three filters; the last two come from an Auditor (nil: auditing is off
// and they do nothing):
//
//	WithAuditID                   early: audit context, Audit-Id header
//	...
//	WithFailedAuthenticationAudit audits requests authentication refuses
//	authn.WithAuthentication
//	WithAudit                     evaluates the policy, emits the stages
//
// In batch mode (the default here; upstream's log default is blocking)
// events are queued in memory and encoded and written by one goroutine in
// batches, so a request pays for a deep copy and a channel send per stage;
// when the queue (10,000 events) is full, events are dropped and counted
// rather than slowing requests.
package audit

// Package policy is the ValidatingAdmissionPolicy admission plugin:
// upstream's, from k8s.io/apiserver/pkg/admission/plugin/policy/validating,
// run unchanged in Myriad's chain through package upstream's adapter. It
// brings the CEL validations, matchConditions, variables,
// paramKind/paramRef (params of any kind, custom resources included, read
// through informers upstream's policy source starts on a dynamic client),
// validationActions Deny, Warn and Audit, messageExpression and
// auditAnnotations, with upstream's cost limits and metrics.
//
// Type checking of policies (status.typeChecking) is not admission: it is
// the validatingadmissionpolicy-status controller in
// internal/controllers/vapstatus, as upstream runs it in the controller
// manager.
//
// MutatingAdmissionPolicy is not served. The libraries would make it
// cheap (k8s.io/api v0.37.2 has its v1 types and k8s.io/apiserver v0.37.2
// the plugin, policy/mutating, on v1 informers), but the API Myriad
// serves is v1.34's, where it is v1beta1 and off by default (the
// registry's completeness test lists it so); serving it is a decision of
// its own.
//
// Audit annotations a policy sets (auditAnnotations, and the failures of
// a binding with validationActions Audit) reach the request's audit event
// through package upstream.
package policy

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
// MutatingAdmissionPolicy is not served: in v1.34 (k8s.io/apiserver
// v0.37.2's API set) it is admissionregistration.k8s.io/v1beta1 and off by
// default, and serving a beta group is a decision of its own.
//
// Audit annotations a policy sets are kept on upstream's attributes
// record and not yet passed to Myriad's audit log.
package policy

// Package vapstatus is the ValidatingAdmissionPolicy status controller
// (kube-controller-manager's "validatingadmissionpolicy-status"): it
// type-checks each policy's CEL expressions against the OpenAPI schemas
// of the kinds the policy matches (and its paramKind) with
// k8s.io/apiserver's validating.TypeChecker, and records the result in
// status.typeChecking with status.observedGeneration, once per
// generation. Schemas come from the API server's OpenAPI v3 documents, so
// custom resources are checked too.
package vapstatus

// Package authz decides whether an authenticated user may do what a request
// asks. An Authorizer judges Attributes — who, which verb, on which
// resource or non-resource path — and WithAuthorization turns a refusal
// into upstream's 403 Forbidden Status, message included, so kubectl and
// scripts that parse it behave as on upstream.
//
// Attributes carry exactly what upstream RBAC rules match on (verb,
// API group, resource, subresource, name, namespace, non-resource path,
// user and groups), so an RBAC authorizer can be added later as one more
// Authorizer in a Union behind PrivilegedGroups(system:masters).
package authz

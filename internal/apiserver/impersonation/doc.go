// Package impersonation lets an authenticated client act as another
// identity through the Impersonate-User, Impersonate-Group, Impersonate-Uid
// and Impersonate-Extra-<key> headers (kubectl --as, --as-group,
// --as-uid), as upstream's WithImpersonation filter.
//
// Every requested attribute is authorized separately as the verb
// "impersonate": users, groups, uids and userextras/<key> in
// authentication.k8s.io, serviceaccounts in the core group for a
// system:serviceaccount:<ns>:<name> user. Only when all are allowed does the
// request continue, as the new identity; the original one is recorded in
// the audit event (impersonatedUser) through k8s.io/apiserver's audit
// context. Malformed headers answer 400 (upstream answers 500; a client
// error is what it is), a refusal 403 with upstream's message.
//
// The filter belongs after authentication and audit, and before
// max-in-flight and authorization, as upstream's chain.
package impersonation

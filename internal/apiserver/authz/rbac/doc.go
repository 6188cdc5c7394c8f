// Package rbac is the RBAC authorizer: it allows a request when a Role or
// ClusterRole bound to the user (by name, by one of its groups, or as a
// ServiceAccount) has a rule that matches it, with upstream's semantics
// (plugin/pkg/auth/authorizer/rbac and pkg/registry/rbac/validation), and
// has no opinion otherwise — RBAC never denies.
//
// Decisions come from an index kept current by client-go informers over
// Roles, RoleBindings, ClusterRoles and ClusterRoleBindings, fed in-process
// from the watch cache (apiserver.Server.ListerWatcher). Bindings are filed
// under each subject they name — a user name or a group, a ServiceAccount
// as its user name — cluster-wide or per namespace, so a decision looks
// only at the bindings naming the user or one of its groups, however many
// bindings the cluster holds. Roles are looked up by name at decision time
// rather than compiled into the bindings, so a role update touches one map
// entry instead of every binding that references it.
//
// The Authorizer is also the authz.RuleResolver behind
// SelfSubjectRulesReview (kubectl auth can-i --list) and the escalation
// check of package rbacrestriction.
package rbac

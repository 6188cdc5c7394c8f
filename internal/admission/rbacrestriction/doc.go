// Package rbacrestriction is the admission plugin that prevents privilege
// escalation through the RBAC API, as upstream's policy-based RBAC
// storage does (pkg/registry/rbac/*/policybased): a user may create or
// update a Role or ClusterRole only with every permission it grants
// already held, or with the "escalate" verb on it; and may create or
// update a RoleBinding or ClusterRoleBinding only holding every permission
// of the role it references, or with the "bind" verb on that role.
// Members of system:masters, and the server's own writes, pass.
//
// It needs the server's authorizer (for escalate and bind), the RBAC rule
// resolver (for what the user holds) and a consistent read of roles (so a
// role created just before its binding is found).
package rbacrestriction

// Package bootstrappolicy is the RBAC policy every cluster starts with:
// upstream's default ClusterRoles (cluster-admin, admin/edit/view and the
// system:aggregate-to-* roles they aggregate, system:node, system:kube-scheduler,
// ...), their ClusterRoleBindings, the Roles and RoleBindings in kube-system
// and kube-public, and one system:controller:* role and binding per
// controller — the data of Kubernetes v1.34's
// plugin/pkg/auth/authorizer/rbac/bootstrappolicy with v1.34's default
// feature gates, checked object for object against upstream's golden files
// (testdata/).
//
// Reconcile is upstream's storage_rbac post-start hook: it creates what is
// missing and adds missing rules and subjects to what exists (never removing
// a user's additions), skipping objects annotated
// rbac.authorization.kubernetes.io/autoupdate=false. It writes through a
// narrow Objects interface so the API server can run it on its own write
// path before it reports ready.
package bootstrappolicy

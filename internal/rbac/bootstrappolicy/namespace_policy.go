package bootstrappolicy

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file is upstream's namespace_policy.go (Kubernetes v1.34): the
// Roles and RoleBindings in kube-system and kube-public.

// namespaced collects roles and bindings per namespace in registration
// order, refusing namespaces outside the reserved kube-* ones and
// repeated names (bugs in this file: they panic in every test).
type namespaced struct {
	roles    map[string][]rbacv1.Role
	bindings map[string][]rbacv1.RoleBinding
}

func (n *namespaced) addRole(namespace string, role rbacv1.Role) {
	checkReserved(namespace)
	for _, r := range n.roles[namespace] {
		if r.Name == role.Name {
			panic("bootstrappolicy: role " + role.Name + " registered twice in " + namespace)
		}
	}
	role.Namespace = namespace
	defaultMetadata(&role.ObjectMeta)
	n.roles[namespace] = append(n.roles[namespace], role)
}

func (n *namespaced) addBinding(namespace string, b rbacv1.RoleBinding) {
	checkReserved(namespace)
	for _, r := range n.bindings[namespace] {
		if r.Name == b.Name {
			panic("bootstrappolicy: rolebinding " + b.Name + " registered twice in " + namespace)
		}
	}
	b.Namespace = namespace
	defaultMetadata(&b.ObjectMeta)
	n.bindings[namespace] = append(n.bindings[namespace], b)
}

func checkReserved(namespace string) {
	if !strings.HasPrefix(namespace, "kube-") {
		panic("bootstrappolicy: roles go only into reserved kube-* namespaces, not " + namespace)
	}
}

func namespaceRole(name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
	return rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func leaderLockingRole(component string) rbacv1.Role {
	return namespaceRole("system::leader-locking-"+component,
		rule("watch").groups(legacyGroup).resources("configmaps").build(),
		rule("get", "update").groups(legacyGroup).resources("configmaps").names(component).build(),
		rule("get", "watch", "list", "create", "update").groups(coordinationGroup).resources("leases").build(),
		rule("get", "watch", "list", "create", "update").groups(coordinationGroup).resources("leasecandidates").build(),
	)
}

func buildNamespaced() *namespaced {
	n := &namespaced{roles: map[string][]rbacv1.Role{}, bindings: map[string][]rbacv1.RoleBinding{}}
	sys, pub := metav1.NamespaceSystem, metav1.NamespacePublic

	// The authentication configuration extension API servers start from.
	n.addRole(sys, namespaceRole("extension-apiserver-authentication-reader",
		rule("get", "list", "watch").groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication").build()))
	n.addRole(sys, namespaceRole(ControllerRolePrefix+"bootstrap-signer",
		rule("get", "list", "watch").groups(legacyGroup).resources("secrets").build()))
	// Deprecated upstream since 1.10, still created.
	n.addRole(sys, namespaceRole(ControllerRolePrefix+"cloud-provider",
		rule("create", "get", "list", "watch").groups(legacyGroup).resources("configmaps").build()))
	n.addRole(sys, namespaceRole(ControllerRolePrefix+"token-cleaner",
		rule("get", "list", "watch", "delete").groups(legacyGroup).resources("secrets").build(),
		eventsRule()))
	n.addRole(sys, leaderLockingRole("kube-controller-manager"))
	n.addRole(sys, leaderLockingRole("kube-scheduler"))

	auth := roleBinding("extension-apiserver-authentication-reader", sys, userSubject(kubeControllerManager), userSubject(kubeSchedulerUser))
	auth.Name = "system::extension-apiserver-authentication-reader"
	n.addBinding(sys, auth)
	n.addBinding(sys, roleBinding("system::leader-locking-kube-controller-manager", sys,
		userSubject(kubeControllerManager), saSubject(sys, "kube-controller-manager"), saSubject(sys, "leader-election-controller")))
	n.addBinding(sys, roleBinding("system::leader-locking-kube-scheduler", sys,
		userSubject(kubeSchedulerUser), saSubject(sys, "kube-scheduler")))
	n.addBinding(sys, roleBinding(ControllerRolePrefix+"bootstrap-signer", sys, saSubject(sys, "bootstrap-signer")))
	n.addBinding(sys, roleBinding(ControllerRolePrefix+"cloud-provider", sys, saSubject(sys, "cloud-provider")))
	n.addBinding(sys, roleBinding(ControllerRolePrefix+"token-cleaner", sys, saSubject(sys, "token-cleaner")))

	n.addRole(pub, namespaceRole(ControllerRolePrefix+"bootstrap-signer",
		rule("get", "list", "watch").groups(legacyGroup).resources("configmaps").build(),
		rule("update").groups(legacyGroup).resources("configmaps").names("cluster-info").build(),
		eventsRule()))
	n.addBinding(pub, roleBinding(ControllerRolePrefix+"bootstrap-signer", pub, saSubject(sys, "bootstrap-signer")))
	return n
}

// NamespaceRoles are the default Roles by namespace.
func NamespaceRoles() map[string][]rbacv1.Role { return buildNamespaced().roles }

// NamespaceRoleBindings are the default RoleBindings by namespace.
func NamespaceRoleBindings() map[string][]rbacv1.RoleBinding { return buildNamespaced().bindings }

package controllers

import (
	"testing"

	"github.com/myriad-k8s/myriad/internal/controllers/job"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccounttoken"
	"github.com/myriad-k8s/myriad/internal/rbac/bootstrappolicy"
)

// TestServiceAccountsHaveRoles: every controller that runs as its own
// ServiceAccount has upstream's role and binding for it, or it would be
// refused everything with --use-service-account-credentials.
func TestServiceAccountsHaveRoles(t *testing.T) {
	bound := map[string]bool{}
	for _, b := range append(bootstrappolicy.ControllerRoleBindings(), bootstrappolicy.NodeBootstrapClusterRoleBindings()...) {
		for _, s := range b.Subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == "kube-system" && b.RoleRef.Name == "system:controller:"+s.Name {
				bound[s.Name] = true
			}
		}
	}
	// Upstream's token-cleaner and bootstrap-signer have namespaced
	// Roles (kube-system's Secrets, kube-public's cluster-info) instead.
	for _, bs := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range bs {
			for _, s := range b.Subjects {
				if s.Kind == "ServiceAccount" && s.Namespace == "kube-system" && b.RoleRef.Name == "system:controller:"+s.Name {
					bound[s.Name] = true
				}
			}
		}
	}
	roles := map[string]bool{}
	for _, rs := range bootstrappolicy.NamespaceRoles() {
		for _, r := range rs {
			roles[r.Name] = true
		}
	}
	for _, r := range append(bootstrappolicy.ControllerRoles(), bootstrappolicy.NodeBootstrapClusterRoles()...) {
		roles[r.Name] = true
	}
	// The Job controller also deletes finished Jobs as upstream's
	// ttl-after-finished controller.
	if sa := job.TTLServiceAccount; !roles["system:controller:"+sa] || !bound[sa] {
		t.Errorf("ServiceAccount %s has no bound role", sa)
	}
	for _, d := range All() {
		sa, ok := serviceAccountNames()[d.Name]
		if d.Name == serviceaccounttoken.Name {
			// Upstream runs it with the manager's own credentials: it
			// makes the tokens the other accounts' clients would use.
			if ok {
				t.Errorf("%s runs as a ServiceAccount", d.Name)
			}
			continue
		}
		if !ok {
			t.Errorf("controller %s has no ServiceAccount", d.Name)
			continue
		}
		if !roles["system:controller:"+sa] || !bound[sa] {
			t.Errorf("controller %s's ServiceAccount %s has no bound role system:controller:%s", d.Name, sa, sa)
		}
	}
}

package bootstrappolicy_test

import (
	"testing"

	"github.com/myriad-k8s/myriad/internal/controllers"
	"github.com/myriad-k8s/myriad/internal/rbac/bootstrappolicy"
)

// TestEveryControllerHasARole checks that each controller Myriad runs has
// a ServiceAccount and that upstream's policy has that account's role and
// binding, so a controller run under its own identity is authorized.
func TestEveryControllerHasARole(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range bootstrappolicy.ControllerRoles() {
		roles[r.Name] = true
	}
	bound := map[string]bool{}
	for _, b := range bootstrappolicy.ControllerRoleBindings() {
		if len(b.Subjects) == 1 && b.Subjects[0].Kind == "ServiceAccount" && b.Subjects[0].Namespace == "kube-system" &&
			b.RoleRef.Name == bootstrappolicy.ControllerRolePrefix+b.Subjects[0].Name {
			bound[b.Subjects[0].Name] = true
		}
	}
	accounts := bootstrappolicy.ControllerServiceAccounts()
	names := map[string]bool{}
	for _, d := range controllers.All() {
		names[d.Name] = true
		sa, ok := accounts[d.Name]
		if !ok {
			t.Errorf("controller %s has no ServiceAccount", d.Name)
			continue
		}
		if !roles[bootstrappolicy.ControllerRolePrefix+sa] {
			t.Errorf("controller %s: no role %s%s", d.Name, bootstrappolicy.ControllerRolePrefix, sa)
		}
		if !bound[sa] {
			t.Errorf("controller %s: role not bound to kube-system/%s", d.Name, sa)
		}
	}
	for name := range accounts {
		if !names[name] {
			t.Errorf("ServiceAccount listed for %s, which is not a controller", name)
		}
	}
}

package bootstrappolicy

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestNodeBootstrapBindings checks the node bootstrap grants bind roles
// the default policy has, to the subjects kubeadm binds them to.
func TestNodeBootstrapBindings(t *testing.T) {
	roles := map[string]bool{}
	for _, r := range append(ClusterRoles(), NodeBootstrapClusterRoles()...) {
		roles[r.Name] = true
	}
	want := map[string][]string{
		"myriad:kubelet-bootstrap":                     {"system:bootstrappers"},
		"myriad:node-autoapprove-bootstrap":            {"system:bootstrappers"},
		"myriad:node-autoapprove-certificate-rotation": {"system:nodes"},
		"system:controller:kubelet-serving-approver":   {"kubelet-serving-approver"},
	}
	got := NodeBootstrapClusterRoleBindings()
	if len(got) != len(want) {
		t.Fatalf("%d bindings, want %d", len(got), len(want))
	}
	for _, b := range got {
		if !roles[b.RoleRef.Name] {
			t.Errorf("%s binds %s, which is not a default ClusterRole", b.Name, b.RoleRef.Name)
		}
		var subjects []string
		for _, s := range b.Subjects {
			if s.Kind != rbacv1.GroupKind && s.Kind != rbacv1.ServiceAccountKind {
				t.Errorf("%s: subject %+v is not a group", b.Name, s)
			}
			subjects = append(subjects, s.Name)
		}
		if !slices.Equal(subjects, want[b.Name]) {
			t.Errorf("%s binds %v, want %v", b.Name, subjects, want[b.Name])
		}
	}
	rb := NodeBootstrapNamespaceRoleBindings()["kube-public"]
	if len(rb) != 1 || rb[0].Subjects[0].Name != "system:anonymous" || rb[0].RoleRef.Name != NodeBootstrapNamespaceRoles()["kube-public"][0].Name {
		t.Errorf("cluster-info binding %+v", rb)
	}
}

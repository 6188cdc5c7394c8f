package bootstrappolicy

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/component-helpers/auth/rbac/validation"
	"sigs.k8s.io/yaml"
)

// The golden files in testdata are upstream's (see testdata/README.md).
// Every object must equal upstream's exactly; there are no intentional
// differences. Upstream's feature-gated objects and rules are those of
// v1.34's default gates, as the golden files are.

// object is what the golden comparison needs of each kind.
type object interface {
	rbacv1.ClusterRole | rbacv1.ClusterRoleBinding | rbacv1.Role | rbacv1.RoleBinding
}

func meta[T object](o *T) *metav1.ObjectMeta {
	switch v := any(o).(type) {
	case *rbacv1.ClusterRole:
		return &v.ObjectMeta
	case *rbacv1.ClusterRoleBinding:
		return &v.ObjectMeta
	case *rbacv1.Role:
		return &v.ObjectMeta
	case *rbacv1.RoleBinding:
		return &v.ObjectMeta
	}
	panic("unreachable")
}

func typeMeta[T object](o *T) *metav1.TypeMeta {
	switch v := any(o).(type) {
	case *rbacv1.ClusterRole:
		return &v.TypeMeta
	case *rbacv1.ClusterRoleBinding:
		return &v.TypeMeta
	case *rbacv1.Role:
		return &v.TypeMeta
	case *rbacv1.RoleBinding:
		return &v.TypeMeta
	}
	panic("unreachable")
}

// readGolden decodes an upstream golden list, keyed by namespace/name.
func readGolden[T object](t *testing.T, file, kind string) map[string]T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		metav1.TypeMeta `json:",inline"`
		metav1.ListMeta `json:"metadata"`
		Items           []T `json:"items"`
	}
	if err := yaml.UnmarshalStrict(data, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if list.APIVersion != "v1" || list.Kind != "List" {
		t.Fatalf("%s: a %s %s, want a v1 List", file, list.APIVersion, list.Kind)
	}
	out := map[string]T{}
	for i := range list.Items {
		o := &list.Items[i]
		if tm := typeMeta(o); tm.APIVersion != rbacv1.SchemeGroupVersion.String() || tm.Kind != kind {
			t.Fatalf("%s: item %d is %s %s, want %s", file, i, tm.APIVersion, tm.Kind, kind)
		}
		*typeMeta(o) = metav1.TypeMeta{}
		m := meta(o)
		out[m.Namespace+"/"+m.Name] = *o
	}
	return out
}

// diffGolden lists how got differs from upstream's objects in file.
func diffGolden[T object](t *testing.T, file, kind string, got []T) []string {
	t.Helper()
	want := readGolden[T](t, file, kind)
	var diffs []string
	seen := map[string]bool{}
	for i := range got {
		m := meta(&got[i])
		key := m.Namespace + "/" + m.Name
		if seen[key] {
			diffs = append(diffs, key+" generated twice")
		}
		seen[key] = true
		w, ok := want[key]
		if !ok {
			diffs = append(diffs, key+" is not upstream's")
			continue
		}
		// reflect.DeepEqual, not semantic equality: nil and empty lists
		// differ on the wire ("rules: null") and must match too.
		if !reflect.DeepEqual(got[i], w) {
			diffs = append(diffs, key+" differs from upstream (-upstream +ours):\n"+diff.Diff(w, got[i]))
		}
	}
	var missing []string
	for key := range want {
		if !seen[key] {
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	for _, key := range missing {
		diffs = append(diffs, "upstream has "+key+", we do not")
	}
	return diffs
}

func compareGolden[T object](t *testing.T, file, kind string, got []T) {
	t.Helper()
	for _, d := range diffGolden(t, file, kind, got) {
		t.Errorf("%s: %s", file, d)
	}
}

func flatten[T any](byNamespace map[string][]T) []T {
	var out []T
	for _, items := range byNamespace {
		out = append(out, items...)
	}
	return out
}

func TestGolden(t *testing.T) {
	t.Run("cluster-roles", func(t *testing.T) { compareGolden(t, "cluster-roles.yaml", "ClusterRole", ClusterRoles()) })
	t.Run("cluster-role-bindings", func(t *testing.T) {
		compareGolden(t, "cluster-role-bindings.yaml", "ClusterRoleBinding", ClusterRoleBindings())
	})
	t.Run("controller-roles", func(t *testing.T) { compareGolden(t, "controller-roles.yaml", "ClusterRole", ControllerRoles()) })
	t.Run("controller-role-bindings", func(t *testing.T) {
		compareGolden(t, "controller-role-bindings.yaml", "ClusterRoleBinding", ControllerRoleBindings())
	})
	t.Run("namespace-roles", func(t *testing.T) {
		compareGolden(t, "namespace-roles.yaml", "Role", flatten(NamespaceRoles()))
	})
	t.Run("namespace-role-bindings", func(t *testing.T) {
		compareGolden(t, "namespace-role-bindings.yaml", "RoleBinding", flatten(NamespaceRoleBindings()))
	})
}

// TestGoldenCatchesDifferences proves the comparison is not vacuous: a
// changed rule, a missing role and an extra role each fail it.
func TestGoldenCatchesDifferences(t *testing.T) {
	mutations := map[string]func([]rbacv1.ClusterRole) []rbacv1.ClusterRole{
		"changed verb": func(r []rbacv1.ClusterRole) []rbacv1.ClusterRole {
			r[0].Rules[0].Verbs = []string{"get"}
			return r
		},
		"missing role": func(r []rbacv1.ClusterRole) []rbacv1.ClusterRole { return r[1:] },
		"extra role": func(r []rbacv1.ClusterRole) []rbacv1.ClusterRole {
			return append(r, rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "extra"}})
		},
		"empty instead of nil rules": func(r []rbacv1.ClusterRole) []rbacv1.ClusterRole {
			for i := range r {
				if r[i].Name == "admin" {
					r[i].Rules = []rbacv1.PolicyRule{}
				}
			}
			return r
		},
	}
	for name, mutate := range mutations {
		t.Run(name, func(t *testing.T) {
			if len(diffGolden(t, "cluster-roles.yaml", "ClusterRole", mutate(ClusterRoles()))) == 0 {
				t.Fatal("comparison passed a policy that differs from upstream")
			}
		})
	}
}

// TestViewDoesNotEscalate is upstream's edit/view relationship check: view
// reads nothing that escalates, and edit's read-only part covers view.
func TestViewDoesNotEscalate(t *testing.T) {
	byName := map[string]rbacv1.ClusterRole{}
	for _, r := range ClusterRoles() {
		byName[r.Name] = r
	}
	view, edit := byName["system:aggregate-to-view"].Rules, byName["system:aggregate-to-edit"].Rules
	for _, res := range []string{"pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"} {
		r := rule(readVerbs()...).groups(legacyGroup).resources(res).build()
		if covers, _ := validation.Covers(view, []rbacv1.PolicyRule{r}); covers {
			t.Errorf("view can read %s", res)
		}
	}
	if covers, _ := validation.Covers(append(view, edit...), view); !covers {
		t.Error("edit+view does not cover view")
	}
	if !equality.Semantic.DeepEqual(byName["admin"].AggregationRule.ClusterRoleSelectors[0].MatchLabels, map[string]string{AggregateToAdminLabel: "true"}) {
		t.Error("admin does not aggregate aggregate-to-admin")
	}
}

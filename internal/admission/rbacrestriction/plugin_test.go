package rbacrestriction

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/rbac"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

func l(s ...string) []string { return s }

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func ref(kind, name string) rbacv1.RoleRef {
	return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
}

// policy is the cluster's RBAC objects in the tests below.
var policy = struct {
	roles               []rbacv1.Role
	clusterRoles        []rbacv1.ClusterRole
	roleBindings        []rbacv1.RoleBinding
	clusterRoleBindings []rbacv1.ClusterRoleBinding
}{
	roles: []rbacv1.Role{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{rule(l("get", "list"), l(""), l("pods"))}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "escalator"}, Rules: []rbacv1.PolicyRule{rule(l("escalate", "create", "update"), l(rbacv1.GroupName), l("roles"))}},
	},
	clusterRoles: []rbacv1.ClusterRole{
		{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "powerful"}, Rules: []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}},
		{ObjectMeta: metav1.ObjectMeta{Name: "binder"}, Rules: []rbacv1.PolicyRule{{Verbs: l("bind"), APIGroups: l(rbacv1.GroupName), Resources: l("clusterroles"), ResourceNames: l("powerful")}}},
	},
	roleBindings: []rbacv1.RoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "bob"}, RoleRef: ref("Role", "pod-reader"), Subjects: []rbacv1.Subject{user("bob")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "eve"}, RoleRef: ref("Role", "escalator"), Subjects: []rbacv1.Subject{user("eve")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "binder"}, RoleRef: ref("ClusterRole", "binder"), Subjects: []rbacv1.Subject{user("binder")}},
	},
	clusterRoleBindings: []rbacv1.ClusterRoleBinding{
		{ObjectMeta: metav1.ObjectMeta{Name: "root"}, RoleRef: ref("ClusterRole", "powerful"), Subjects: []rbacv1.Subject{user("root")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "broken"}, RoleRef: ref("ClusterRole", "gone"), Subjects: []rbacv1.Subject{user("carol")}},
	},
}

// staticLW lists list and never changes. It streams no initial events,
// so it tells the reflector to list (as client-go's fakes do).
type staticLW struct{ cache.ListWatch }

func (*staticLW) IsWatchListSemanticsUnSupported() bool { return true }

func newStaticLW(list runtime.Object) cache.ListerWatcher {
	return &staticLW{cache.ListWatch{
		ListFunc:  func(metav1.ListOptions) (runtime.Object, error) { return list.DeepCopyObject(), nil },
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}}
}

// newPlugin builds the plugin over a started RBAC authorizer holding policy.
func newPlugin(t *testing.T) *Plugin {
	t.Helper()
	lists := map[string]runtime.Object{
		"roles":               &rbacv1.RoleList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: policy.roles},
		"clusterroles":        &rbacv1.ClusterRoleList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: policy.clusterRoles},
		"rolebindings":        &rbacv1.RoleBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: policy.roleBindings},
		"clusterrolebindings": &rbacv1.ClusterRoleBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: policy.clusterRoleBindings},
	}
	az, err := rbac.New(func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return newStaticLW(lists[gvr.Resource]), nil
	}, rbac.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := az.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(az.Stop)
	for deadline := time.Now().Add(5 * time.Second); !az.HasSynced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("authorizer not synced")
		}
	}
	get := func(_ context.Context, gvr schema.GroupVersionResource, ns, name, _ string) (runtime.Object, error) {
		switch gvr.Resource {
		case "roles":
			for i := range policy.roles {
				if r := &policy.roles[i]; r.Namespace == ns && r.Name == name {
					return r, nil
				}
			}
		case "clusterroles":
			for i := range policy.clusterRoles {
				if r := &policy.clusterRoles[i]; r.Name == name {
					return r, nil
				}
			}
		}
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	return New(authz.Union(authz.PrivilegedGroups(request.GroupMasters), az), az, get)
}

func TestValidate(t *testing.T) {
	p := newPlugin(t)
	u := func(name string, groups ...string) *request.User {
		return &request.User{Name: name, Groups: append(groups, request.GroupAuthenticated)}
	}
	bob, eve, binder, root, carol := u("bob"), u("eve"), u("binder"), u("root"), u("carol")
	roleGVR := rbacv1.SchemeGroupVersion.WithResource("roles")
	clusterRoleGVR := rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	rbGVR := rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	crbGVR := rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	newRole := func(ns string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
		return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Rules: rules}
	}
	newRB := func(ns string, r rbacv1.RoleRef) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rb"}, RoleRef: r, Subjects: []rbacv1.Subject{user("x")}}
	}
	aggregating := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"},
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"x": "y"}}}}}
	withOwner := newRole("a", rule(l("delete"), l(""), l("pods")))
	withOwner.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "o", UID: "u"}}

	tests := []struct {
		name     string
		op       admission.Operation
		gvr      schema.GroupVersionResource
		ns       string
		obj, old runtime.Object
		user     *request.User
		code     int32
		message  string
	}{
		{"role within held rules", admission.Create, roleGVR, "a", newRole("a", rule(l("get"), l(""), l("pods"))), nil, bob, 0, ""},
		{"role with a rule not held", admission.Create, roleGVR, "a", newRole("a", rule(l("get", "delete"), l(""), l("pods")), rule(l("get"), l("apps"), l("deployments"))), nil, bob, 403,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`},
		{"rules held in another namespace only", admission.Create, roleGVR, "b", newRole("b", rule(l("get", "list"), l(""), l("pods"))), nil, bob, 403,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`},
		{"escalate verb", admission.Create, roleGVR, "a", newRole("a", rule(l("*"), l("*"), l("*"))), nil, eve, 0, ""},
		{"escalate verb on update", admission.Update, roleGVR, "a", newRole("a", rule(l("*"), l("*"), l("*"))), newRole("a"), eve, 0, ""},
		{"escalate verb elsewhere", admission.Create, roleGVR, "b", newRole("b", rule(l("get"), l(""), l("pods"))), nil, eve, 403,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "eve" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{"update adding a rule", admission.Update, roleGVR, "a", newRole("a", rule(l("delete"), l(""), l("pods"))), newRole("a"), bob, 403,
			`roles.rbac.authorization.k8s.io "r" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`},
		{"update of owner references only", admission.Update, roleGVR, "a", withOwner, newRole("a", rule(l("delete"), l(""), l("pods"))), bob, 0, ""},
		{"cluster-wide holder", admission.Create, clusterRoleGVR, "", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("secrets"))}}, nil, root, 0, ""},
		{"cluster role needs cluster-wide rules", admission.Create, clusterRoleGVR, "", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: []rbacv1.PolicyRule{rule(l("get"), l(""), l("pods"))}}, nil, bob, 403,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{"aggregation rule needs full authority", admission.Create, clusterRoleGVR, "", aggregating, nil, bob, 403,
			`clusterroles.rbac.authorization.k8s.io "agg" is forbidden: must have cluster-admin privileges to use the aggregationRule`},
		{"aggregation rule by full authority", admission.Create, clusterRoleGVR, "", aggregating, nil, root, 0, ""},
		{"resolution errors reported", admission.Create, clusterRoleGVR, "", &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Rules: []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/metrics")}}}, nil, carol, 403,
			`clusterroles.rbac.authorization.k8s.io "c" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{NonResourceURLs:["/metrics"], Verbs:["get"]}; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]`},
		{"bind a role held", admission.Create, rbGVR, "a", newRB("a", ref("ClusterRole", "pod-reader")), nil, bob, 0, ""},
		{"bind a role not held", admission.Create, rbGVR, "a", newRB("a", ref("ClusterRole", "powerful")), nil, bob, 403,
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"bind verb on the role", admission.Create, rbGVR, "a", newRB("a", ref("ClusterRole", "powerful")), nil, binder, 0, ""},
		{"bind verb in another namespace", admission.Create, rbGVR, "b", newRB("b", ref("ClusterRole", "powerful")), nil, binder, 403,
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "binder" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`},
		{"bind verb names another role", admission.Update, rbGVR, "a", newRB("a", ref("Role", "escalator")), newRB("a", ref("ClusterRole", "powerful")), binder, 403,
			`rolebindings.rbac.authorization.k8s.io "rb" is forbidden: user "binder" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["rbac.authorization.k8s.io"], Resources:["roles"], Verbs:["escalate" "create" "update"]}`},
		{"bind a missing role", admission.Create, rbGVR, "a", newRB("a", ref("Role", "missing")), nil, bob, 404,
			`roles.rbac.authorization.k8s.io "missing" not found`},
		{"unsupported kind", admission.Create, rbGVR, "a", newRB("a", ref("Thing", "x")), nil, bob, 400,
			`unsupported role reference kind: "Thing"`},
		{"cluster role binding by a namespaced holder", admission.Create, crbGVR, "", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: ref("ClusterRole", "pod-reader")}, nil, bob, 403,
			`clusterrolebindings.rbac.authorization.k8s.io "crb" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`},
		{"cluster role binding by full authority", admission.Create, crbGVR, "", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: ref("ClusterRole", "powerful")}, nil, root, 0, ""},
		{"system:masters", admission.Create, crbGVR, "", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: ref("ClusterRole", "powerful")}, nil, u("admin", request.GroupMasters), 0, ""},
		{"server's own write", admission.Create, crbGVR, "", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "crb"}, RoleRef: ref("ClusterRole", "powerful")}, nil, nil, 0, ""},
		{"other resources", admission.Create, corev1.SchemeGroupVersion.WithResource("pods"), "a", &corev1.Pod{}, nil, bob, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &admission.Attributes{Operation: tt.op, Resource: tt.gvr, Namespace: tt.ns, Object: tt.obj, OldObject: tt.old, User: tt.user}
			if m, ok := tt.obj.(metav1.Object); ok {
				a.Name = m.GetName()
			}
			err := p.Validate(context.Background(), a)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("error %v (%T), want a %d", err, err, tt.code)
			}
			if s := status.Status(); s.Code != tt.code || s.Message != tt.message {
				t.Fatalf("got %d %s\nwant %d %s", s.Code, s.Message, tt.code, tt.message)
			}
		})
	}
}

func TestHandles(t *testing.T) {
	p := New(nil, nil, nil)
	for op, want := range map[admission.Operation]bool{admission.Create: true, admission.Update: true, admission.Delete: false, admission.Connect: false} {
		if p.Handles(op) != want {
			t.Errorf("Handles(%s) = %v", op, !want)
		}
	}
}

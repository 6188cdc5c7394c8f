package rbac

import (
	"context"
	"errors"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// fed returns an Authorizer whose index was fed objs through the same
// handlers the informers call.
func fed(t testing.TB, objs ...runtime.Object) *Authorizer {
	t.Helper()
	a, err := New(func(schema.GroupVersionResource) (cache.ListerWatcher, error) { return nil, errors.New("not started") }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		add(a.index, o)
	}
	return a
}

// add files o as the informers' add handlers do.
func add(x *index, o runtime.Object) {
	switch o.(type) {
	case *rbacv1.Role:
		roleHandler(x, roleRules).OnAdd(o, true)
	case *rbacv1.ClusterRole:
		roleHandler(x, clusterRoleRules).OnAdd(o, true)
	case *rbacv1.RoleBinding:
		bindingHandler(x, roleBindingEntry).OnAdd(o, true)
	case *rbacv1.ClusterRoleBinding:
		bindingHandler(x, clusterRoleBindingEntry).OnAdd(o, true)
	default:
		panic("unexpected object")
	}
}

func rule(verbs, groups, resources []string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

func l(s ...string) []string { return s }

func clusterRole(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func role(ns, name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
}

func crb(name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

func rb(ns, name, kind, roleName string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: roleName}, Subjects: subjects}
}

func userSubj(n string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: n}
}
func groupSubj(n string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n}
}
func saSubj(ns, n string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: n}
}

// res is a resource request.
func res(u *request.User, verb, group, resource, sub, ns, name string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, IsResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func nonRes(u *request.User, verb, path string) authz.Attributes {
	return authz.Attributes{User: u, Verb: verb, Path: path}
}

func TestAuthorize(t *testing.T) {
	alice := &request.User{Name: "alice", Groups: []string{"devs", request.GroupAuthenticated}}
	bob := &request.User{Name: "bob", Groups: []string{request.GroupAuthenticated}}
	node := &request.User{Name: "system:node:n1", Groups: []string{"system:nodes", request.GroupAuthenticated}}
	sa := &request.User{Name: "system:serviceaccount:a:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:a", request.GroupAuthenticated}}
	saB := &request.User{Name: "system:serviceaccount:b:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:b", request.GroupAuthenticated}}

	a := fed(t,
		clusterRole("pod-reader", rule(l("get", "list", "watch"), l(""), l("pods"))),
		clusterRole("everything", rule(l("*"), l("*"), l("*"))),
		clusterRole("deploy-scaler", rule(l("update"), l("apps"), l("deployments/scale"))),
		clusterRole("status-writer", rule(l("patch"), l("*"), l("*/status"))),
		clusterRole("one-cm", rbacv1.PolicyRule{Verbs: l("get", "update"), APIGroups: l(""), Resources: l("configmaps"), ResourceNames: l("cfg")}),
		clusterRole("health", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz", "/healthz/*", "/version")}),
		clusterRole("leases", rule(l("get", "create", "update"), l("coordination.k8s.io"), l("leases"))),
		role("a", "secret-reader", rule(l("get"), l(""), l("secrets"))),
		role("a", "pod-creator", rule(l("create"), l(""), l("pods"))),

		crb("devs-read-pods", "ClusterRole", "pod-reader", groupSubj("devs")),
		crb("nodes-leases", "ClusterRole", "leases", groupSubj("system:nodes")),
		crb("health", "ClusterRole", "health", groupSubj(request.GroupAuthenticated)),
		crb("scaler", "ClusterRole", "deploy-scaler", userSubj("alice")),
		crb("status", "ClusterRole", "status-writer", userSubj("bob")),
		crb("cm", "ClusterRole", "one-cm", userSubj("bob")),
		// A ServiceAccount in a ClusterRoleBinding needs its namespace.
		crb("sa-no-ns", "ClusterRole", "everything", saSubj("", "builder")),
		// A ClusterRole bound in a namespace applies there only.
		rb("a", "alice-all", "ClusterRole", "everything", userSubj("alice")),
		rb("a", "bob-secrets", "Role", "secret-reader", userSubj("bob")),
		// The ServiceAccount's namespace defaults to the binding's.
		rb("a", "builder", "Role", "pod-creator", saSubj("", "builder")),
		rb("b", "other-builder", "ClusterRole", "pod-reader", saSubj("a", "builder")),
	)

	tests := []struct {
		name   string
		attrs  authz.Attributes
		want   authz.Decision
		reason string
	}{
		{"group binding", res(alice, "list", "", "pods", "", "x", ""), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "devs-read-pods" of ClusterRole "pod-reader" to Group "devs"`},
		{"verb not in rule", res(alice, "delete", "", "pods", "", "x", "p"), authz.DecisionNoOpinion, ""},
		{"other group", res(bob, "list", "", "pods", "", "x", ""), authz.DecisionNoOpinion, ""},
		{"wrong api group", res(alice, "list", "metrics.k8s.io", "pods", "", "x", ""), authz.DecisionNoOpinion, ""},
		{"subresource not matched by resource", res(alice, "get", "", "pods", "log", "x", "p"), authz.DecisionNoOpinion, ""},
		{"res/sub", res(alice, "update", "apps", "deployments", "scale", "x", "d"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "scaler" of ClusterRole "deploy-scaler" to User "alice"`},
		{"res/sub does not match the resource", res(alice, "update", "apps", "deployments", "", "x", "d"), authz.DecisionNoOpinion, ""},
		{"res/sub other sub", res(alice, "update", "apps", "deployments", "status", "x", "d"), authz.DecisionNoOpinion, ""},
		{"*/sub", res(bob, "patch", "apps", "deployments", "status", "x", "d"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "status" of ClusterRole "status-writer" to User "bob"`},
		{"*/sub does not match the resource", res(bob, "patch", "apps", "deployments", "", "x", "d"), authz.DecisionNoOpinion, ""},
		{"*/sub suffix only", res(bob, "patch", "", "pods", "xstatus", "x", "d"), authz.DecisionNoOpinion, ""},
		{"resourceNames match", res(bob, "get", "", "configmaps", "", "x", "cfg"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "cm" of ClusterRole "one-cm" to User "bob"`},
		{"resourceNames other name", res(bob, "get", "", "configmaps", "", "x", "other"), authz.DecisionNoOpinion, ""},
		{"resourceNames never a list", res(bob, "list", "", "configmaps", "", "x", ""), authz.DecisionNoOpinion, ""},
		{"nonResourceURL exact", nonRes(bob, "get", "/version"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated"`},
		{"nonResourceURL prefix", nonRes(bob, "get", "/healthz/etcd"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "health" of ClusterRole "health" to Group "system:authenticated"`},
		{"nonResourceURL verb", nonRes(bob, "post", "/healthz"), authz.DecisionNoOpinion, ""},
		{"nonResourceURL other", nonRes(bob, "get", "/metrics"), authz.DecisionNoOpinion, ""},
		{"nonResource rule never matches a resource", res(bob, "get", "", "healthz", "", "", ""), authz.DecisionNoOpinion, ""},
		{"resource rule never matches a path", nonRes(alice, "get", "/api/v1/pods"), authz.DecisionNoOpinion, ""},
		{"ClusterRole in RoleBinding: its namespace", res(alice, "delete", "", "secrets", "", "a", "s"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "alice-all/a" of ClusterRole "everything" to User "alice"`},
		{"ClusterRole in RoleBinding: not elsewhere", res(alice, "delete", "", "secrets", "", "b", "s"), authz.DecisionNoOpinion, ""},
		{"ClusterRole in RoleBinding: not cluster-wide", res(alice, "delete", "", "nodes", "", "", "n"), authz.DecisionNoOpinion, ""},
		{"ClusterRole in RoleBinding: not across namespaces", res(alice, "list", "", "secrets", "", "", ""), authz.DecisionNoOpinion, ""},
		{"Role", res(bob, "get", "", "secrets", "", "a", "s"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "bob-secrets/a" of Role "secret-reader" to User "bob"`},
		{"Role other verb", res(bob, "list", "", "secrets", "", "a", ""), authz.DecisionNoOpinion, ""},
		{"node group lease", res(node, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "nodes-leases" of ClusterRole "leases" to Group "system:nodes"`},
		{"SA defaulted namespace", res(sa, "create", "", "pods", "", "a", ""), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "builder/a" of Role "pod-creator" to ServiceAccount "builder/a"`},
		{"same SA name other namespace", res(saB, "create", "", "pods", "", "a", ""), authz.DecisionNoOpinion, ""},
		{"SA from another namespace bound here", res(sa, "get", "", "pods", "", "b", "p"), authz.DecisionAllow,
			`RBAC: allowed by RoleBinding "other-builder/b" of ClusterRole "pod-reader" to ServiceAccount "builder/a"`},
		{"SA in ClusterRoleBinding without namespace", res(sa, "delete", "", "nodes", "", "", "n"), authz.DecisionNoOpinion, ""},
		{"no user", res(nil, "get", "", "pods", "", "a", "p"), authz.DecisionNoOpinion, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if d != tt.want || reason != tt.reason {
				t.Fatalf("got %v %q, want %v %q", d, reason, tt.want, tt.reason)
			}
		})
	}
}

func TestAuthorizeWildcards(t *testing.T) {
	u := &request.User{Name: "u"}
	tests := []struct {
		rule  rbacv1.PolicyRule
		attrs authz.Attributes
		want  bool
	}{
		{rule(l("*"), l(""), l("pods")), res(u, "deletecollection", "", "pods", "", "n", ""), true},
		{rule(l("get"), l("*"), l("pods")), res(u, "get", "whatever.io", "pods", "", "n", "p"), true},
		// A review may ask about the verb "*": only a rule's "*" grants it.
		{rule(l("get", "list"), l(""), l("pods")), res(u, "*", "", "pods", "", "n", ""), false},
		{rule(l("*"), l(""), l("pods")), res(u, "*", "", "pods", "", "n", ""), true},
		{rule(l("*"), l(""), l("pods")), res(u, "escalate", "", "pods", "", "n", ""), true},
		{rule(l("escalate"), l(""), l("pods")), res(u, "escalate", "", "pods", "", "n", ""), true},
		{rule(l("bind"), l(""), l("pods")), res(u, "escalate", "", "pods", "", "n", ""), false},
		{rule(l("*"), l(""), l("*")), res(u, "*", "", "*", "", "n", ""), true},
		{rule(l("*"), l(""), l("pods")), res(u, "get", "", "*", "", "n", ""), false},
		{rule(l("get"), l(""), l("*")), res(u, "get", "", "pods", "log", "n", "p"), true},
		{rule(l("get"), l(""), l("*")), res(u, "get", "apps", "deployments", "", "n", "p"), false},
		{rule(l("get"), l(""), l("*/log")), res(u, "get", "", "pods", "log", "n", "p"), true},
		{rule(l("get"), l(""), l("pods/*")), res(u, "get", "", "pods", "log", "n", "p"), false},
		{rbacv1.PolicyRule{Verbs: l("*"), NonResourceURLs: l("*")}, nonRes(u, "delete", "/anything"), true},
		{rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/api*")}, nonRes(u, "get", "/apis/apps"), true},
		{rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/api/")}, nonRes(u, "get", "/api"), false},
	}
	for _, tt := range tests {
		a := fed(t, clusterRole("r", tt.rule), crb("b", "ClusterRole", "r", userSubj("u")))
		d, _, _ := a.Authorize(context.Background(), tt.attrs)
		if got := d == authz.DecisionAllow; got != tt.want {
			t.Errorf("rule %v on %+v: allowed %v, want %v", tt.rule, tt.attrs, got, tt.want)
		}
	}
}

func TestMissingRoles(t *testing.T) {
	u := &request.User{Name: "u", Groups: []string{"g"}}
	a := fed(t,
		clusterRole("reader", rule(l("get"), l(""), l("pods"))),
		// Bound twice (by user and group): reported once.
		crb("gone", "ClusterRole", "missing", userSubj("u"), groupSubj("g")),
		crb("role-in-crb", "Role", "reader", userSubj("u")),
		rb("ns", "gone-role", "Role", "nope", userSubj("u")),
		rb("ns", "works", "ClusterRole", "reader", userSubj("u")),
	)
	d, reason, err := a.Authorize(context.Background(), res(u, "list", "", "pods", "", "ns", ""))
	if d != authz.DecisionNoOpinion || err != nil {
		t.Fatalf("got %v %v", d, err)
	}
	// The order of the two cluster-wide bindings follows the index.
	want1 := `RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "reader" not found, role.rbac.authorization.k8s.io "nope" not found]`
	if reason != want1 {
		t.Fatalf("reason %q\nwant %q", reason, want1)
	}
	// A missing role does not stop another binding from allowing.
	d, reason, _ = a.Authorize(context.Background(), res(u, "get", "", "pods", "", "ns", "p"))
	if d != authz.DecisionAllow || reason != `RBAC: allowed by RoleBinding "works/ns" of ClusterRole "reader" to User "u"` {
		t.Fatalf("got %v %q", d, reason)
	}
	// The role appearing later is picked up without touching the binding.
	add(a.index, clusterRole("missing", rule(l("list"), l(""), l("pods"))))
	d, reason, _ = a.Authorize(context.Background(), res(u, "list", "", "pods", "", "ns", ""))
	if d != authz.DecisionAllow || reason != `RBAC: allowed by ClusterRoleBinding "gone" of ClusterRole "missing" to User "u"` {
		t.Fatalf("got %v %q", d, reason)
	}
}

func TestIndexUpdatesAndDeletes(t *testing.T) {
	u := &request.User{Name: "u"}
	a := fed(t, clusterRole("r", rule(l("get"), l(""), l("pods"))), crb("b", "ClusterRole", "r", userSubj("u")))
	get := res(u, "get", "", "pods", "", "ns", "p")
	allowed := func() bool {
		d, _, _ := a.Authorize(context.Background(), get)
		return d == authz.DecisionAllow
	}
	if !allowed() {
		t.Fatal("not allowed")
	}
	// Rebinding to someone else unfiles the old subject.
	bindingHandler(a.index, clusterRoleBindingEntry).OnUpdate(nil, crb("b", "ClusterRole", "r", userSubj("v")))
	if allowed() {
		t.Fatal("allowed after the binding moved to v")
	}
	bindingHandler(a.index, clusterRoleBindingEntry).OnUpdate(nil, crb("b", "ClusterRole", "r", userSubj("v"), userSubj("u")))
	if !allowed() {
		t.Fatal("not allowed after u was added back")
	}
	// A role's rules change in place.
	roleHandler(a.index, clusterRoleRules).OnUpdate(nil, clusterRole("r", rule(l("list"), l(""), l("pods"))))
	if allowed() {
		t.Fatal("allowed after the role lost get")
	}
	roleHandler(a.index, clusterRoleRules).OnUpdate(nil, clusterRole("r", rule(l("get"), l(""), l("pods"))))
	bindingHandler(a.index, clusterRoleBindingEntry).OnDelete(crb("b", "ClusterRole", "r"))
	if allowed() {
		t.Fatal("allowed after the binding was deleted")
	}
	if len(a.index.bySubject) != 0 || len(a.index.bindings) != 0 {
		t.Fatalf("index not empty: %v %v", a.index.bySubject, a.index.bindings)
	}
	roleHandler(a.index, clusterRoleRules).OnDelete(clusterRole("r"))
	if len(a.index.clusterRoles) != 0 {
		t.Fatal("role left behind")
	}
}

func TestRulesFor(t *testing.T) {
	u := &request.User{Name: "u", Groups: []string{"g"}}
	a := fed(t,
		clusterRole("mixed", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l(""), Resources: l("pods"), NonResourceURLs: l("/x")}),
		clusterRole("urls", rbacv1.PolicyRule{Verbs: l("get"), NonResourceURLs: l("/healthz")}),
		role("ns", "secrets", rbacv1.PolicyRule{Verbs: l("get"), APIGroups: l(""), Resources: l("secrets"), ResourceNames: l("s")}),
		// Found by user and by group: listed once.
		crb("a-mixed", "ClusterRole", "mixed", userSubj("u"), groupSubj("g")),
		crb("b-urls", "ClusterRole", "urls", groupSubj("g")),
		crb("other", "ClusterRole", "mixed", userSubj("someone-else")),
		rb("ns", "secrets", "Role", "secrets", userSubj("u")),
		rb("other-ns", "secrets", "ClusterRole", "mixed", userSubj("u")),
	)
	resource, nonResource, incomplete, err := a.RulesFor(context.Background(), u, "ns")
	if err != nil || incomplete {
		t.Fatalf("incomplete %v, %v", incomplete, err)
	}
	wantRes := []authz.ResourceRule{
		{Verbs: l("get"), APIGroups: l(""), Resources: l("pods")},
		{Verbs: l("get"), APIGroups: l(""), Resources: l("secrets"), ResourceNames: l("s")},
	}
	wantNonRes := []authz.NonResourceRule{{Verbs: l("get"), NonResourceURLs: l("/x")}, {Verbs: l("get"), NonResourceURLs: l("/healthz")}}
	if !reflect.DeepEqual(resource, wantRes) || !reflect.DeepEqual(nonResource, wantNonRes) {
		t.Fatalf("got %+v %+v", resource, nonResource)
	}
	// Cluster-wide only without a namespace.
	resource, _, _, _ = a.RulesFor(context.Background(), u, "")
	if len(resource) != 1 {
		t.Fatalf("cluster-wide rules %+v", resource)
	}
	// An unresolvable binding: the rest still listed, incomplete, error.
	add(a.index, rb("ns", "broken", "Role", "missing", groupSubj("g")))
	resource, _, incomplete, err = a.RulesFor(context.Background(), u, "ns")
	if !incomplete || err == nil || err.Error() != `role.rbac.authorization.k8s.io "missing" not found` || len(resource) != 2 {
		t.Fatalf("incomplete %v, err %v, rules %+v", incomplete, err, resource)
	}
	if resource, nonResource, incomplete, err := a.RulesFor(context.Background(), &request.User{Name: "nobody"}, "ns"); resource != nil || nonResource != nil || incomplete || err != nil {
		t.Fatalf("nobody: %v %v %v %v", resource, nonResource, incomplete, err)
	}
}

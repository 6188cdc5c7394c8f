package apiserver

import (
	"context"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/rbac/bootstrappolicy"
)

// TestBootstrapRBAC starts a server on an empty store, changes the default
// policy as users do, restarts, and checks that reconciliation restored
// the defaults, kept the users' additions and left protected objects
// alone — then that a restart on a reconciled store writes nothing.
func TestBootstrapRBAC(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rbac := e.cs.RbacV1()

	crs, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(bootstrappolicy.ClusterRoles()) + len(bootstrappolicy.ControllerRoles()) + len(bootstrappolicy.NodeBootstrapClusterRoles()); len(crs.Items) != want {
		t.Fatalf("%d ClusterRoles after start, want %d", len(crs.Items), want)
	}
	crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(bootstrappolicy.ClusterRoleBindings()) + len(bootstrappolicy.ControllerRoleBindings()) + len(bootstrappolicy.NodeBootstrapClusterRoleBindings()); len(crbs.Items) != want {
		t.Fatalf("%d ClusterRoleBindings after start, want %d", len(crbs.Items), want)
	}
	if _, err := rbac.Roles("kube-public").Get(ctx, "system:controller:bootstrap-signer", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("kube-system").Get(ctx, "system::extension-apiserver-authentication-reader", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	userRule := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{"example.com"}, Resources: []string{"widgets"}}
	alice := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}

	// cluster-admin loses its non-resource rule and gains a label.
	admin := getClusterRole(t, e, "cluster-admin")
	admin.Rules = admin.Rules[:1]
	admin.Labels["team"] = "ops"
	updateClusterRole(t, e, admin)
	// system:discovery gains a rule of the user's.
	disc := getClusterRole(t, e, "system:discovery")
	disc.Rules = append(disc.Rules, userRule)
	updateClusterRole(t, e, disc)
	// system:basic-user opts out of reconciliation and loses a rule.
	basic := getClusterRole(t, e, "system:basic-user")
	basic.Annotations[rbacv1.AutoUpdateAnnotationKey] = "false"
	basic.Rules = basic.Rules[:1]
	updateClusterRole(t, e, basic)
	// A binding gains a subject; another is deleted; a third is replaced
	// by one pointing at another role.
	basicBinding, err := rbac.ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	basicBinding.Subjects = append(basicBinding.Subjects, alice)
	if _, err := rbac.ClusterRoleBindings().Update(ctx, basicBinding, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := rbac.ClusterRoleBindings().Delete(ctx, "cluster-admin", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dns, err := rbac.ClusterRoleBindings().Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rbac.ClusterRoleBindings().Delete(ctx, dns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	dns.ResourceVersion, dns.UID = "", ""
	dns.RoleRef.Name = "view"
	if _, err := rbac.ClusterRoleBindings().Create(ctx, dns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A namespaced role is deleted.
	if err := rbac.Roles("kube-system").Delete(ctx, "system::leader-locking-kube-scheduler", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	e.stopServer()
	e.startServer()
	rbac = e.cs.RbacV1()

	admin = getClusterRole(t, e, "cluster-admin")
	if len(admin.Rules) != 2 || admin.Labels["team"] != "ops" {
		t.Errorf("cluster-admin after restart: rules %v, labels %v; want both default rules and the user's label", admin.Rules, admin.Labels)
	}
	disc = getClusterRole(t, e, "system:discovery")
	if !slices.ContainsFunc(disc.Rules, func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, userRule.Resources) }) {
		t.Errorf("system:discovery lost the user's rule: %v", disc.Rules)
	}
	basic = getClusterRole(t, e, "system:basic-user")
	if len(basic.Rules) != 1 {
		t.Errorf("protected system:basic-user was reconciled: %v", basic.Rules)
	}
	basicBinding, err = rbac.ClusterRoleBindings().Get(ctx, "system:basic-user", metav1.GetOptions{})
	if err != nil || !slices.Contains(basicBinding.Subjects, alice) {
		t.Errorf("system:basic-user binding lost alice: %v, %v", basicBinding, err)
	}
	if _, err := rbac.ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("cluster-admin binding not recreated: %v", err)
	}
	dns, err = rbac.ClusterRoleBindings().Get(ctx, "system:kube-dns", metav1.GetOptions{})
	if err != nil || dns.RoleRef.Name != "system:kube-dns" {
		t.Errorf("system:kube-dns binding not recreated with its roleRef: %v, %v", dns, err)
	}
	if _, err := rbac.Roles("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system role not recreated: %v", err)
	}

	// On a reconciled store, reconciliation reads and writes nothing.
	res, err := bootstrappolicy.Reconcile(request.WithUser(ctx, bootstrapUser), serverObjects{e.api}, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	if res.Writes() != 0 || res.Protected != 1 {
		t.Errorf("second reconciliation: %+v, want no writes and one protected role", res)
	}
}

func getClusterRole(t *testing.T, e *testEnv, name string) *rbacv1.ClusterRole {
	t.Helper()
	cr, err := e.cs.RbacV1().ClusterRoles().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cr
}

func updateClusterRole(t *testing.T, e *testEnv, cr *rbacv1.ClusterRole) {
	t.Helper()
	if _, err := e.cs.RbacV1().ClusterRoles().Update(context.Background(), cr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestBootstrapRBACGetMissing checks serverObjects answers the API's
// NotFound, which the reconciliation library relies on to create.
func TestBootstrapRBACGetMissing(t *testing.T) {
	e := newEnv(t)
	_, err := serverObjects{e.api}.Get(context.Background(), rbacClusterRolesGVR, "", "no-such-role")
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Get of a missing role: %v, want NotFound", err)
	}
}

// BenchmarkReconcileReconciled is the cost reconciliation adds to every
// restart: one store read per default object, no writes.
func BenchmarkReconcileReconciled(b *testing.B) {
	e := newEnv(b)
	ctx := request.WithUser(context.Background(), bootstrapUser)
	b.ReportAllocs()
	for b.Loop() {
		res, err := bootstrappolicy.Reconcile(ctx, serverObjects{e.api}, quietLogger())
		if err != nil || res.Writes() != 0 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// BenchmarkReconcileEmpty is the cost of a first start: every default
// object created (the store emptied of them between iterations).
func BenchmarkReconcileEmpty(b *testing.B) {
	e := newEnv(b)
	ctx := request.WithUser(context.Background(), bootstrapUser)
	rbac := e.cs.RbacV1()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		all := metav1.ListOptions{}
		for _, err := range []error{
			rbac.ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			rbac.ClusterRoleBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			rbac.Roles("kube-system").DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			rbac.Roles("kube-public").DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			rbac.RoleBindings("kube-system").DeleteCollection(ctx, metav1.DeleteOptions{}, all),
			rbac.RoleBindings("kube-public").DeleteCollection(ctx, metav1.DeleteOptions{}, all),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		res, err := bootstrappolicy.Reconcile(ctx, serverObjects{e.api}, quietLogger())
		if err != nil || res.Created != 131 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}

// failingCreates is the server's Objects with creates of one name failing,
// to see Reconcile carry on past a failure and report it.
type failingCreates struct {
	serverObjects
	name string
}

func (f failingCreates) Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetName() == f.name {
		return nil, apierrors.NewServiceUnavailable("injected failure")
	}
	return f.serverObjects.Create(ctx, gvr, obj)
}

func TestBootstrapRBACReportsFailures(t *testing.T) {
	e := newEnv(t)
	ctx := request.WithUser(context.Background(), bootstrapUser)
	for _, name := range []string{"system:node", "system:kube-dns"} {
		if err := e.cs.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := bootstrappolicy.Reconcile(ctx, failingCreates{serverObjects{e.api}, "system:node"}, quietLogger())
	if err == nil || !strings.Contains(err.Error(), "clusterrole system:node") || !strings.Contains(err.Error(), "injected failure") {
		t.Fatalf("Reconcile error %v, want the injected failure naming system:node", err)
	}
	if res.Created != 1 {
		t.Errorf("created %d objects, want 1 (system:kube-dns)", res.Created)
	}
	if _, err := e.cs.RbacV1().ClusterRoles().Get(ctx, "system:kube-dns", metav1.GetOptions{}); err != nil {
		t.Errorf("system:kube-dns not recreated past the failure: %v", err)
	}
}

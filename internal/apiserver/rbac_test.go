package apiserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/admission/rbacrestriction"
	"github.com/myriad-k8s/myriad/internal/apiserver/authn"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz/rbac"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// TestRBAC runs the RBAC authorizer and the escalation check the way the
// control plane wires them: the authorizer watches the server's own caches
// through ListerWatcher, gates readiness, and sits behind
// PrivilegedGroups(system:masters) in the authorization filter; requests
// without a token are the admin's, "alice-token" is alice's.
func TestRBAC(t *testing.T) {
	var e *testEnv
	az, err := rbac.New(func(gvr schema.GroupVersionResource) (cache.ListerWatcher, error) {
		return e.api.ListerWatcher(gvr)
	}, rbac.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(az.Stop)
	full := authz.Union(authz.PrivilegedGroups(request.GroupMasters), az)
	admin := &request.User{Name: request.AdminUser, Groups: []string{request.GroupMasters, request.GroupAuthenticated}}
	auth := authn.Union(
		authn.BearerToken(authn.NewStaticTokens(map[string]*request.User{"alice-token": {Name: "alice"}})),
		authn.AuthenticatorFunc(func(r *http.Request) (*request.User, bool, error) {
			return admin, r.Header.Get("Authorization") == "", nil
		}),
	)
	e = newEnv(t,
		withConfig(func(c *Config) {
			c.AdmissionPlugins = []admission.Interface{rbacrestriction.New(full, az, func(ctx context.Context, gvr schema.GroupVersionResource, ns, name, rv string) (runtime.Object, error) {
				return e.api.GetObject(ctx, gvr, ns, name, rv)
			})}
		}),
		withHandler(func(h http.Handler) http.Handler {
			return filters.Chain(h, filters.WithRequestInfo,
				authn.WithAuthentication(auth, authn.Config{Logger: quietLogger()}),
				authz.WithAuthorization(full, quietLogger()))
		}),
	)
	ctx := context.Background()
	// The authorizer's index must be complete before the server is ready.
	e.api.AddReadinessCheck("rbac", az.HasSynced)
	if e.api.Ready() {
		t.Fatal("ready before the RBAC informers started")
	}
	if err := az.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "RBAC synced and server ready", e.api.Ready)

	for _, ns := range []string{"a", "b"} {
		e.createNamespace(ns)
	}
	_, err = e.cs.RbacV1().RoleBindings("a").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	aliceCfg := rest.CopyConfig(e.cfg)
	aliceCfg.BearerToken = "alice-token"
	alice, err := kubernetes.NewForConfig(aliceCfg)
	if err != nil {
		t.Fatal(err)
	}
	// The role was created after its binding: the binding counts as soon
	// as the role is seen.
	within(t, time.Second, "alice may list pods in a", func() error {
		_, err := alice.CoreV1().Pods("a").List(ctx, metav1.ListOptions{})
		return err
	})
	_, err = alice.CoreV1().Pods("b").List(ctx, metav1.ListOptions{})
	wantForbidden(t, err, `pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "b"`)
	_, err = alice.CoreV1().Pods("a").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, metav1.CreateOptions{})
	wantForbidden(t, err, `pods is forbidden: User "alice" cannot create resource "pods" in API group "" in the namespace "a"`)

	// A new binding is noticed within a second.
	_, err = e.cs.RbacV1().RoleBindings("b").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "alice may list pods in b", func() error {
		_, err := alice.CoreV1().Pods("b").List(ctx, metav1.ListOptions{})
		return err
	})
	// And its deletion too.
	if err := e.cs.RbacV1().RoleBindings("b").Delete(ctx, "alice-view", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "alice refused in b again", func() error {
		_, err := alice.CoreV1().Pods("b").List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) {
			return nil
		}
		return err
	})

	// Escalation: alice, allowed to manage roles in a but holding only
	// pod-reader there, may write a Role within that and nothing more.
	_, err = e.cs.RbacV1().Roles("a").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-manager"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"create", "update"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.cs.RbacV1().RoleBindings("a").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-rbac"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "rbac-manager"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	within(t, time.Second, "alice may create a Role she holds", func() error {
		_, err := alice.RbacV1().Roles("a").Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: "reader"},
			Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
		}, metav1.CreateOptions{})
		return err
	})
	_, err = alice.RbacV1().Roles("a").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "deleter"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "delete"}, APIGroups: []string{""}, Resources: []string{"pods", "secrets"}}},
	}, metav1.CreateOptions{})
	wantForbidden(t, err, `roles.rbac.authorization.k8s.io "deleter" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}`)
	// Binding herself to cluster-admin-like power is refused too.
	if _, err := e.cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = alice.RbacV1().RoleBindings("a").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-everything"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{})
	wantForbidden(t, err, `rolebindings.rbac.authorization.k8s.io "alice-everything" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`)
	// The admin (system:masters) may.
	if _, err := e.cs.RbacV1().RoleBindings("a").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-everything"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// within retries f until it succeeds or d passes.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %v", what, d, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantForbidden(t *testing.T, err error, message string) {
	t.Helper()
	if !apierrors.IsForbidden(err) {
		t.Fatalf("want 403, got %v", err)
	}
	if got := err.Error(); got != message {
		t.Fatalf("message\n got %s\nwant %s", got, message)
	}
}

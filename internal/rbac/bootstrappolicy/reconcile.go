package bootstrappolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
)

// Objects is the API Reconcile writes through, with the authority of the
// server itself. Errors are the API's: NotFound from Get, AlreadyExists
// from Create, Conflict from an Update or Delete whose precondition (the
// object's resourceVersion, the UID) no longer holds. Get reads the
// latest stored object, not a cache's: what it returns is what Update's
// compare-and-swap is checked against.
type Objects interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Update(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
	Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, uid types.UID) error
}

// The resources Reconcile writes.
var (
	clusterRolesGVR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	clusterRoleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	rolesGVR               = rbacv1.SchemeGroupVersion.WithResource("roles")
	roleBindingsGVR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	namespacesGVR          = corev1.SchemeGroupVersion.WithResource("namespaces")
)

// Result counts what Reconcile did, object by object.
type Result struct {
	Created, Updated, Recreated, Unchanged int
	// Protected objects (autoupdate "false") lacked rules or subjects of
	// the default policy and were left as they are.
	Protected int
}

// Writes is how many objects Reconcile wrote.
func (r Result) Writes() int { return r.Created + r.Updated + r.Recreated }

func (r *Result) count(op reconciliation.ReconcileOperation, protected bool) {
	switch {
	case protected && op != reconciliation.ReconcileNone:
		r.Protected++
	case op == reconciliation.ReconcileCreate:
		r.Created++
	case op == reconciliation.ReconcileUpdate:
		r.Updated++
	case op == reconciliation.ReconcileRecreate:
		r.Recreated++
	default:
		r.Unchanged++
	}
}

// Reconcile makes the stored policy hold the default one, as upstream's
// storage_rbac post-start hook does: each default ClusterRole (the
// controllers' included), ClusterRoleBinding, Role and RoleBinding is
// created if missing; one that exists gets the default's missing rules,
// aggregation selectors, subjects, labels and annotations added — what a
// user added stays — unless it is annotated
// rbac.authorization.kubernetes.io/autoupdate: "false". A binding whose
// roleRef differs is deleted and recreated (a roleRef cannot change).
//
// Nothing is written when the store already holds the policy, so a
// restart costs one read per object. Conflicts are retried; other
// failures do not stop the rest and are returned together.
//
// Upstream's migrations for clusters from before 1.9 (copying admin, edit
// and view to the system:aggregate-to-* roles, splitting
// system:discovery's binding) are left out: no Myriad store predates the
// aggregated roles.
func Reconcile(ctx context.Context, objs Objects, log *slog.Logger) (Result, error) {
	// Objects are independent of one another, so they are reconciled
	// concurrently: on an empty store each create is a durable write, and
	// concurrent writes share the store's syncs (sequential, the 131
	// creates took 70-700 ms on a busy disk).
	var mu struct {
		sync.Mutex
		res  Result
		errs []error
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, reconcileConcurrency)
	run := func(kind, ns, name string, fn func() (reconciliation.ReconcileOperation, bool, any, error)) {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			reconcileOne(kind, ns, name, fn, log, func(op reconciliation.ReconcileOperation, protected bool, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					mu.errs = append(mu.errs, err)
					return
				}
				mu.res.count(op, protected)
			})
		}()
	}
	roles := ownerModifier{ctx: ctx, objs: objs, gvr: clusterRolesGVR, wrap: wrapClusterRole}
	for _, cr := range slices.Concat(ClusterRoles(), ControllerRoles(), NodeBootstrapClusterRoles()) {
		run("clusterrole", "", cr.Name, func() (reconciliation.ReconcileOperation, bool, any, error) {
			expected := reconciliation.ClusterRoleRuleOwner{ClusterRole: cr.DeepCopy()}
			if roleUpToDate(roles, expected) {
				return reconciliation.ReconcileNone, false, nil, nil
			}
			r, err := (&reconciliation.ReconcileRoleOptions{Role: expected, Client: roles, Confirm: true}).Run()
			if err != nil {
				return "", false, nil, err
			}
			return r.Operation, r.Protected, r.MissingRules, nil
		})
	}
	bindings := bindingModifier{ctx: ctx, objs: objs, gvr: clusterRoleBindingsGVR, wrap: wrapClusterRoleBinding}
	for _, crb := range slices.Concat(ClusterRoleBindings(), ControllerRoleBindings(), NodeBootstrapClusterRoleBindings()) {
		run("clusterrolebinding", "", crb.Name, func() (reconciliation.ReconcileOperation, bool, any, error) {
			expected := reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: crb.DeepCopy()}
			if bindingUpToDate(bindings, expected) {
				return reconciliation.ReconcileNone, false, nil, nil
			}
			r, err := (&reconciliation.ReconcileRoleBindingOptions{RoleBinding: expected, Client: bindings, Confirm: true}).Run()
			if err != nil {
				return "", false, nil, err
			}
			return r.Operation, r.Protected, r.MissingSubjects, nil
		})
	}
	nsRoles := ownerModifier{ctx: ctx, objs: objs, gvr: rolesGVR, wrap: wrapRole, namespaced: true}
	nsRoleSets := mergeNamespaced(NamespaceRoles(), NodeBootstrapNamespaceRoles())
	for _, ns := range sortedKeys(nsRoleSets) {
		for _, role := range nsRoleSets[ns] {
			run("role", ns, role.Name, func() (reconciliation.ReconcileOperation, bool, any, error) {
				expected := reconciliation.RoleRuleOwner{Role: role.DeepCopy()}
				if roleUpToDate(nsRoles, expected) {
					return reconciliation.ReconcileNone, false, nil, nil
				}
				r, err := (&reconciliation.ReconcileRoleOptions{Role: expected, Client: nsRoles, Confirm: true}).Run()
				if err != nil {
					return "", false, nil, err
				}
				return r.Operation, r.Protected, r.MissingRules, nil
			})
		}
	}
	nsBindings := bindingModifier{ctx: ctx, objs: objs, gvr: roleBindingsGVR, wrap: wrapRoleBinding, namespaced: true}
	nsBindingSets := mergeNamespaced(NamespaceRoleBindings(), NodeBootstrapNamespaceRoleBindings())
	for _, ns := range sortedKeys(nsBindingSets) {
		for _, rb := range nsBindingSets[ns] {
			run("rolebinding", ns, rb.Name, func() (reconciliation.ReconcileOperation, bool, any, error) {
				expected := reconciliation.RoleBindingAdapter{RoleBinding: rb.DeepCopy()}
				if bindingUpToDate(nsBindings, expected) {
					return reconciliation.ReconcileNone, false, nil, nil
				}
				r, err := (&reconciliation.ReconcileRoleBindingOptions{RoleBinding: expected, Client: nsBindings, Confirm: true}).Run()
				if err != nil {
					return "", false, nil, err
				}
				return r.Operation, r.Protected, r.MissingSubjects, nil
			})
		}
	}
	wg.Wait()
	return mu.res, errors.Join(mu.errs...)
}

// mergeNamespaced adds b's objects to a's, namespace by namespace.
func mergeNamespaced[T any](a, b map[string][]T) map[string][]T {
	for ns, objs := range b {
		a[ns] = append(a[ns], objs...)
	}
	return a
}

// reconcileConcurrency bounds the objects reconciled at once.
const reconcileConcurrency = 16

// reconcileOne runs fn, retrying conflicts, logs what it did and reports
// the outcome to done.
func reconcileOne(kind, ns, name string, fn func() (reconciliation.ReconcileOperation, bool, any, error), log *slog.Logger,
	done func(reconciliation.ReconcileOperation, bool, error)) {
	var op reconciliation.ReconcileOperation
	var protected bool
	var missing any
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		var err error
		op, protected, missing, err = fn()
		return err
	})
	if err != nil {
		done("", false, fmt.Errorf("reconciling %s %s: %w", kind, qualified(ns, name), err))
		return
	}
	switch {
	case protected && op != reconciliation.ReconcileNone:
		log.Warn("skipped reconcile-protected default RBAC object lacking defaults", "kind", kind, "name", qualified(ns, name), "missing", missing)
	case op != reconciliation.ReconcileNone:
		log.Debug("reconciled default RBAC object", "kind", kind, "name", qualified(ns, name), "operation", op, "missing", missing)
	}
	done(op, protected, nil)
}

// The library computes coverage for every object, which costs most of a
// restart's reconciliation (a set per rule, some 20 ms for the whole
// policy). roleUpToDate and bindingUpToDate answer the common case on a
// reconciled store — the stored object holds exactly the default's rules
// or subjects and all its labels and annotations, where the library would
// find nothing to do — so the library runs only for objects that differ.
// Any doubt (a read error, a difference) defers to the library.

func roleUpToDate(m ownerModifier, expected reconciliation.RuleOwner) bool {
	existing, err := m.Get(expected.GetNamespace(), expected.GetName())
	if err != nil {
		return false
	}
	// With both aggregated, the library ignores the stored rules (the
	// aggregation controller's) when the default has none of its own.
	bothAggregated := existing.GetAggregationRule() != nil && expected.GetAggregationRule() != nil && len(expected.GetRules()) == 0
	return hasKeys(existing.GetLabels(), expected.GetLabels()) &&
		hasKeys(existing.GetAnnotations(), expected.GetAnnotations()) &&
		(bothAggregated || slices.EqualFunc(existing.GetRules(), expected.GetRules(), ruleEqual)) &&
		equality.Semantic.DeepEqual(existing.GetAggregationRule(), expected.GetAggregationRule())
}

func bindingUpToDate(m bindingModifier, expected reconciliation.RoleBinding) bool {
	existing, err := m.Get(expected.GetNamespace(), expected.GetName())
	if err != nil {
		return false
	}
	return existing.GetRoleRef() == expected.GetRoleRef() &&
		hasKeys(existing.GetLabels(), expected.GetLabels()) &&
		hasKeys(existing.GetAnnotations(), expected.GetAnnotations()) &&
		slices.Equal(existing.GetSubjects(), expected.GetSubjects())
}

// ruleEqual compares rules field by field (no reflection: it runs for
// every rule of every default role at each start); nil and empty lists
// are equal, as they are on the wire.
func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.ResourceNames, b.ResourceNames) && slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// hasKeys reports whether have has every key of want: the library merges
// the default's labels and annotations under the stored ones, so only a
// missing key changes anything.
func hasKeys(have, want map[string]string) bool {
	for k := range want {
		if _, ok := have[k]; !ok {
			return false
		}
	}
	return true
}

func qualified(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// reconciled is what the reconciliation library hands its modifiers: a
// RuleOwner (role) or a RoleBinding.
type reconciled interface {
	GetNamespace() string
	GetObject() runtime.Object
}

// modifier is the reconciliation library's RuleOwnerModifier (T
// RuleOwner) and RoleBindingModifier (T RoleBinding) over Objects. The
// library's interfaces have no context: the modifier carries Reconcile's.
type modifier[T reconciled] struct {
	ctx        context.Context
	objs       Objects
	gvr        schema.GroupVersionResource
	wrap       func(runtime.Object) (T, error)
	namespaced bool
}

type (
	ownerModifier   = modifier[reconciliation.RuleOwner]
	bindingModifier = modifier[reconciliation.RoleBinding]
)

func (m modifier[T]) Get(namespace, name string) (T, error) {
	obj, err := m.objs.Get(m.ctx, m.gvr, namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return m.wrap(obj)
}

func (m modifier[T]) Create(in T) (T, error) {
	if m.namespaced {
		if err := ensureNamespace(m.ctx, m.objs, in.GetNamespace()); err != nil {
			var zero T
			return zero, err
		}
	}
	obj, err := m.objs.Create(m.ctx, m.gvr, in.GetObject())
	if err != nil {
		var zero T
		return zero, err
	}
	return m.wrap(obj)
}

func (m modifier[T]) Update(in T) (T, error) {
	obj, err := m.objs.Update(m.ctx, m.gvr, in.GetObject())
	if err != nil {
		var zero T
		return zero, err
	}
	return m.wrap(obj)
}

// Delete is the RoleBindingModifier's: a binding whose roleRef changed is
// recreated.
func (m modifier[T]) Delete(namespace, name string, uid types.UID) error {
	return m.objs.Delete(m.ctx, m.gvr, namespace, name, uid)
}

// ensureNamespace creates namespace if it is missing, as upstream's
// reconciliation does before creating a Role or RoleBinding in it.
func ensureNamespace(ctx context.Context, objs Objects, namespace string) error {
	_, err := objs.Get(ctx, namespacesGVR, "", namespace)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	_, err = objs.Create(ctx, namespacesGVR, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func wrapClusterRole(obj runtime.Object) (reconciliation.RuleOwner, error) {
	o, ok := obj.(*rbacv1.ClusterRole)
	if !ok {
		return nil, fmt.Errorf("bootstrappolicy: got %T, want a ClusterRole", obj)
	}
	return reconciliation.ClusterRoleRuleOwner{ClusterRole: o}, nil
}

func wrapRole(obj runtime.Object) (reconciliation.RuleOwner, error) {
	o, ok := obj.(*rbacv1.Role)
	if !ok {
		return nil, fmt.Errorf("bootstrappolicy: got %T, want a Role", obj)
	}
	return reconciliation.RoleRuleOwner{Role: o}, nil
}

func wrapClusterRoleBinding(obj runtime.Object) (reconciliation.RoleBinding, error) {
	o, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return nil, fmt.Errorf("bootstrappolicy: got %T, want a ClusterRoleBinding", obj)
	}
	return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: o}, nil
}

func wrapRoleBinding(obj runtime.Object) (reconciliation.RoleBinding, error) {
	o, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return nil, fmt.Errorf("bootstrappolicy: got %T, want a RoleBinding", obj)
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: o}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

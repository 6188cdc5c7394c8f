package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/cache"
)

// The informers' handlers file what they see into the index. They run on
// each informer's own goroutine, one event at a time, so an object's
// events arrive in order; the index's lock orders them against decisions.

// roleHandler keeps the index's rules for one kind of role; rules gives
// an object's namespace ("" for a ClusterRole), name and rules.
func roleHandler(x *index, rules func(obj any) (ns, name string, r []rbacv1.PolicyRule, ok bool)) cache.ResourceEventHandler {
	set := func(obj any) {
		if ns, name, r, ok := rules(obj); ok {
			x.setRole(ns, name, r)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj) },
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if ns, name, _, ok := rules(obj); ok {
				x.deleteRole(ns, name)
			}
		},
	}
}

func roleRules(obj any) (string, string, []rbacv1.PolicyRule, bool) {
	r, ok := obj.(*rbacv1.Role)
	if !ok {
		return "", "", nil, false
	}
	return r.Namespace, r.Name, r.Rules, true
}

func clusterRoleRules(obj any) (string, string, []rbacv1.PolicyRule, bool) {
	r, ok := obj.(*rbacv1.ClusterRole)
	if !ok {
		return "", "", nil, false
	}
	return "", r.Name, r.Rules, true
}

// bindingHandler keeps the index's bindings of one kind; entry builds the
// index entry for an object.
func bindingHandler(x *index, entry func(obj any) (*binding, bool)) cache.ResourceEventHandler {
	set := func(obj any) {
		if b, ok := entry(obj); ok {
			x.setBinding(b)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj) },
		UpdateFunc: func(_, obj any) { set(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if b, ok := entry(obj); ok {
				x.deleteBinding(b.namespace, b.name)
			}
		},
	}
}

func roleBindingEntry(obj any) (*binding, bool) {
	b, ok := obj.(*rbacv1.RoleBinding)
	if !ok {
		return nil, false
	}
	return newBinding(b.Namespace, b.Name, b.RoleRef, b.Subjects), true
}

func clusterRoleBindingEntry(obj any) (*binding, bool) {
	b, ok := obj.(*rbacv1.ClusterRoleBinding)
	if !ok {
		return nil, false
	}
	return newBinding("", b.Name, b.RoleRef, b.Subjects), true
}

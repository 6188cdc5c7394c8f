package rbac

import (
	"fmt"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// subjectKind says what a subjectKey names. A ServiceAccount subject is
// filed as the user it authenticates as ("system:serviceaccount:ns:name"),
// which is how upstream matches it (serviceaccount.MatchesUsername).
type subjectKind uint8

const (
	userSubject subjectKind = iota
	groupSubject
)

// subjectKey is one user or group name; with a namespace ("" for
// cluster-wide bindings) it is the key bindings are filed under.
type subjectKey struct {
	namespace string
	kind      subjectKind
	name      string
}

// roleKey names a Role (namespace set) or a ClusterRole (namespace "").
type roleKey struct {
	namespace, name string
}

// binding is a RoleBinding (namespace set) or ClusterRoleBinding as the
// index keeps it. Its fields are read-only once filed: an update files a
// new binding and unfiles the old one.
type binding struct {
	namespace, name string
	roleRef         rbacv1.RoleRef
	// subjects are the binding's, shared with the informer's object.
	subjects []rbacv1.Subject
	// reasons[i] is the allow reason naming subjects[i], built once here
	// rather than with a Sprintf on every allowed request.
	reasons []string
	// keys are the distinct subject keys the binding is filed under.
	keys []subjectKey
}

// index maps subjects to the bindings naming them and roles to their
// rules. It is safe for concurrent use; decisions hold the read lock for
// the few map lookups and rule scans they make.
type index struct {
	mu sync.RWMutex
	// roles and clusterRoles hold each Role's and ClusterRole's rules,
	// shared with the informers' objects (read-only).
	roles        map[roleKey]*compiledRole
	clusterRoles map[string]*compiledRole
	// bySubject files each binding under every subject it names.
	bySubject map[subjectKey][]*binding
	// bindings finds a filed binding by namespace/name to unfile it.
	bindings map[roleKey]*binding
}

func newIndex() *index {
	return &index{
		roles:        map[roleKey]*compiledRole{},
		clusterRoles: map[string]*compiledRole{},
		bySubject:    map[subjectKey][]*binding{},
		bindings:     map[roleKey]*binding{},
	}
}

// setRole records the rules of the Role namespace/name, or of the
// ClusterRole name when namespace is "".
func (x *index) setRole(namespace, name string, rules []rbacv1.PolicyRule) {
	c := compileRole(rules)
	x.mu.Lock()
	defer x.mu.Unlock()
	if namespace == "" {
		x.clusterRoles[name] = c
		return
	}
	x.roles[roleKey{namespace, name}] = c
}

func (x *index) deleteRole(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if namespace == "" {
		delete(x.clusterRoles, name)
		return
	}
	delete(x.roles, roleKey{namespace, name})
}

// roleRulesLocked resolves a binding's roleRef as upstream's
// GetRoleReferenceRules over listers, errors included: a ClusterRoleBinding
// naming a Role looks for a Role in namespace "" and finds none.
func (x *index) roleRulesLocked(b *binding) (*compiledRole, error) {
	switch b.roleRef.Kind {
	case "Role":
		if rules, ok := x.roles[roleKey{b.namespace, b.roleRef.Name}]; ok {
			return rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("role"), b.roleRef.Name)
	case "ClusterRole":
		if rules, ok := x.clusterRoles[b.roleRef.Name]; ok {
			return rules, nil
		}
		return nil, apierrors.NewNotFound(rbacv1.Resource("clusterrole"), b.roleRef.Name)
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", b.roleRef.Kind)
}

// setBinding files b, replacing any binding of the same namespace/name.
func (x *index) setBinding(b *binding) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := roleKey{b.namespace, b.name}
	if old, ok := x.bindings[k]; ok {
		x.unfileLocked(old)
	}
	x.bindings[k] = b
	for _, sk := range b.keys {
		x.bySubject[sk] = append(x.bySubject[sk], b)
	}
}

func (x *index) deleteBinding(namespace, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	k := roleKey{namespace, name}
	if old, ok := x.bindings[k]; ok {
		x.unfileLocked(old)
		delete(x.bindings, k)
	}
}

// unfileLocked removes b from the subject lists. Readers hold the read
// lock for as long as they use a list, so it is edited in place.
func (x *index) unfileLocked(b *binding) {
	for _, sk := range b.keys {
		list := x.bySubject[sk]
		out := list[:0]
		for _, e := range list {
			if e != b {
				out = append(out, e)
			}
		}
		clear(list[len(out):])
		if len(out) == 0 {
			delete(x.bySubject, sk)
		} else {
			x.bySubject[sk] = out
		}
	}
}

// newBinding builds the index entry for a binding in namespace ("" for a
// ClusterRoleBinding).
func newBinding(namespace, name string, roleRef rbacv1.RoleRef, subjects []rbacv1.Subject) *binding {
	b := &binding{namespace: namespace, name: name, roleRef: roleRef, subjects: subjects, reasons: make([]string, len(subjects))}
	seen := make(map[subjectKey]bool, len(subjects))
	for i := range subjects {
		s := &subjects[i]
		b.reasons[i] = "RBAC: allowed by " + b.describe(s)
		k, ok := keyFor(namespace, s)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		b.keys = append(b.keys, k)
	}
	return b
}

// keyFor is the key a subject of a binding in namespace is filed under;
// false for a subject that can match no one (an unknown kind, or a
// ServiceAccount without a namespace in a ClusterRoleBinding).
func keyFor(namespace string, s *rbacv1.Subject) (subjectKey, bool) {
	switch s.Kind {
	case rbacv1.UserKind:
		return subjectKey{namespace, userSubject, s.Name}, true
	case rbacv1.GroupKind:
		return subjectKey{namespace, groupSubject, s.Name}, true
	case rbacv1.ServiceAccountKind:
		// A RoleBinding's ServiceAccount defaults to the binding's namespace.
		saNamespace := namespace
		if s.Namespace != "" {
			saNamespace = s.Namespace
		}
		if saNamespace == "" {
			return subjectKey{}, false
		}
		return subjectKey{namespace, userSubject, serviceAccountPrefix + saNamespace + ":" + s.Name}, true
	}
	return subjectKey{}, false
}

const serviceAccountPrefix = "system:serviceaccount:"

// describe is upstream's clusterRoleBindingDescriber / roleBindingDescriber.
func (b *binding) describe(s *rbacv1.Subject) string {
	subject := fmt.Sprintf("%s %q", s.Kind, s.Name)
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = b.namespace
		}
		subject = fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	if b.namespace == "" {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.name, b.roleRef.Kind, b.roleRef.Name, subject)
	}
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.name+"/"+b.namespace, b.roleRef.Kind, b.roleRef.Name, subject)
}

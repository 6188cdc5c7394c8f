package rbacrestriction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/authz"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// ObjectGetter reads one object as apiserver.Server.GetObject does: rv ""
// is a consistent read, and a missing object is the resource's NotFound.
type ObjectGetter func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, rv string) (runtime.Object, error)

var (
	rolesGVR        = rbacv1.SchemeGroupVersion.WithResource("roles")
	clusterRolesGVR = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
)

// fullAuthority is what using an aggregationRule requires: it can gather
// any rule.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

// Plugin is the escalation and bind check; see the package doc.
type Plugin struct {
	authorizer authz.Authorizer
	rules      authz.RuleResolver
	get        ObjectGetter
}

var _ admission.ValidationInterface = (*Plugin)(nil)

// New builds the plugin. authorizer decides the escalate and bind verbs
// (the server's whole authorizer, as upstream passes); rules says what a
// user holds (RBAC's rule resolver); get reads referenced roles.
func New(authorizer authz.Authorizer, rules authz.RuleResolver, get ObjectGetter) *Plugin {
	return &Plugin{authorizer: authorizer, rules: rules, get: get}
}

// Handles creates and updates; deleting a role or binding grants nothing.
func (p *Plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// Validate refuses a write of a role or binding that would grant a.User
// something it does not hold.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.User == nil || a.Subresource != "" || a.Resource.Group != rbacv1.GroupName {
		return nil
	}
	switch a.Resource.Resource {
	case "roles", "clusterroles", "rolebindings", "clusterrolebindings":
	default:
		return nil
	}
	// system:masters is the server's privileged loopback identity and may
	// always do anything (upstream's EscalationAllowed).
	if slices.Contains(a.User.Groups, request.GroupMasters) {
		return nil
	}
	// Upstream lets the garbage collector drop owner references and
	// finalizers whatever the object grants.
	if a.Operation == admission.Update && onlyGCFieldsChange(a.Object, a.OldObject) {
		return nil
	}
	gr := a.GroupResource()
	switch obj := a.Object.(type) {
	case *rbacv1.Role:
		if p.escalationAuthorized(ctx, a) {
			return nil
		}
		return p.confirmNoEscalation(ctx, a.User, a.Namespace, gr, obj.Name, obj.Rules)
	case *rbacv1.ClusterRole:
		if p.escalationAuthorized(ctx, a) {
			return nil
		}
		if err := p.confirmNoEscalation(ctx, a.User, "", gr, obj.Name, obj.Rules); err != nil {
			return err
		}
		old, _ := a.OldObject.(*rbacv1.ClusterRole)
		if hasAggregationRule(obj) || (old != nil && hasAggregationRule(old)) {
			if err := p.confirmNoEscalation(ctx, a.User, "", gr, obj.Name, fullAuthority); err != nil {
				return apierrors.NewForbidden(gr, obj.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
		return nil
	case *rbacv1.RoleBinding:
		return p.checkBinding(ctx, a.User, a.Namespace, gr, obj.Name, obj.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return p.checkBinding(ctx, a.User, "", gr, obj.Name, obj.RoleRef)
	}
	return apierrors.NewInternalError(fmt.Errorf("rbacrestriction: unexpected %T for %s", a.Object, gr))
}

// escalationAuthorized asks whether the user has the "escalate" verb on the
// role being written (upstream's RoleEscalationAuthorized). A create's
// request names no object, so neither does the question.
func (p *Plugin) escalationAuthorized(ctx context.Context, a *admission.Attributes) bool {
	name := a.Name
	if a.Operation == admission.Create {
		name = ""
	}
	d, _, _ := p.authorizer.Authorize(ctx, authz.Attributes{
		User: a.User, Verb: "escalate", IsResourceRequest: true,
		APIGroup: a.Resource.Group, APIVersion: "*", Resource: a.Resource.Resource,
		Namespace: a.Namespace, Name: name,
	})
	return d == authz.DecisionAllow
}

// checkBinding lets a binding to roleRef through if the user may "bind" the
// role in the binding's namespace ("" for a ClusterRoleBinding) or holds
// every rule of it there (upstream's BindingAuthorized, then
// ConfirmNoEscalation). An unresolvable role is the reading's error, as
// upstream's 404.
func (p *Plugin) checkBinding(ctx context.Context, user *request.User, namespace string, gr schema.GroupResource, name string, ref rbacv1.RoleRef) error {
	attrs := authz.Attributes{User: user, Verb: "bind", IsResourceRequest: true, Namespace: namespace, APIGroup: ref.APIGroup, APIVersion: "*", Name: ref.Name}
	var gvr schema.GroupVersionResource
	roleNamespace := namespace
	switch ref.Kind {
	case "ClusterRole":
		attrs.Resource, gvr, roleNamespace = "clusterroles", clusterRolesGVR, ""
	case "Role":
		attrs.Resource, gvr = "roles", rolesGVR
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("unsupported role reference kind: %q", ref.Kind))
	}
	if d, _, _ := p.authorizer.Authorize(ctx, attrs); d == authz.DecisionAllow {
		return nil
	}
	if ref.Kind == "Role" && namespace == "" {
		return errors.New("must provide namespace when getting role")
	}
	obj, err := p.get(ctx, gvr, roleNamespace, ref.Name, "")
	if err != nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	switch r := obj.(type) {
	case *rbacv1.Role:
		rules = r.Rules
	case *rbacv1.ClusterRole:
		rules = r.Rules
	default:
		return apierrors.NewInternalError(fmt.Errorf("rbacrestriction: unexpected %T for %s", obj, gvr))
	}
	return p.confirmNoEscalation(ctx, user, namespace, gr, name, rules)
}

// confirmNoEscalation refuses unless what user holds in namespace covers
// rules, with upstream's message listing what is missing.
func (p *Plugin) confirmNoEscalation(ctx context.Context, user *request.User, namespace string, gr schema.GroupResource, name string, rules []rbacv1.PolicyRule) error {
	resource, nonResource, _, resolveErr := p.rules.RulesFor(ctx, user, namespace)
	owner := make([]rbacv1.PolicyRule, 0, len(resource)+len(nonResource))
	for _, r := range resource {
		owner = append(owner, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, r := range nonResource {
		owner = append(owner, rbacv1.PolicyRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
	}
	covered, missing := validation.Covers(owner, rules)
	if covered {
		return nil
	}
	descriptions := sets.New[string]()
	for _, r := range compactRules(missing) {
		descriptions.Insert(compactString(r))
	}
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s",
		user.Name, user.Groups, strings.Join(sets.List(descriptions), "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: %v", []error{resolveErr})
	}
	return apierrors.NewForbidden(gr, name, errors.New(msg))
}

func hasAggregationRule(r *rbacv1.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// onlyGCFieldsChange is upstream's IsOnlyMutatingGCFields: obj differs
// from old in owner references and finalizers at most (and in what the
// server itself sets on every write).
func onlyGCFieldsChange(obj, old runtime.Object) bool {
	if obj == nil || old == nil {
		return false
	}
	copied := obj.DeepCopyObject()
	cm, err := meta.Accessor(copied)
	if err != nil {
		return false
	}
	om, err := meta.Accessor(old)
	if err != nil {
		return false
	}
	cm.SetOwnerReferences(om.GetOwnerReferences())
	cm.SetFinalizers(om.GetFinalizers())
	cm.SetSelfLink(om.GetSelfLink())
	cm.SetManagedFields(om.GetManagedFields())
	cm.SetResourceVersion(om.GetResourceVersion())
	cm.SetGeneration(om.GetGeneration())
	return equality.Semantic.DeepEqual(copied, old)
}

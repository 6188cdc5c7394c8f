package registry

import (
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// RBAC names only need to be valid path segments: role names like
// "system:controller:foo" are common.

func roleResource(_ clock) *Resource {
	gv := v1(rbacGroup)
	s := strategy[*rbacv1.Role]{behavior[*rbacv1.Role]{
		namespaced: true,
		name:       path.ValidatePathSegmentName,
		validate:   func(r *rbacv1.Role) field.ErrorList { return validatePolicyRules(r.Rules, true) },
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Role",
		Resource:         "roles",
		SingularName:     "role",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &rbacv1.Role{} },
		NewList:          func() runtime.Object { return &rbacv1.RoleList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            createdAtTable[*rbacv1.Role](),
		StorageKeyPrefix: storagePrefix(gv, "roles"),
	}
}

func clusterRoleResource(_ clock) *Resource {
	gv := v1(rbacGroup)
	s := strategy[*rbacv1.ClusterRole]{behavior[*rbacv1.ClusterRole]{
		name: path.ValidatePathSegmentName,
		validate: func(r *rbacv1.ClusterRole) field.ErrorList {
			errs := validatePolicyRules(r.Rules, false)
			if ar := r.AggregationRule; ar != nil {
				ap := field.NewPath("aggregationRule", "clusterRoleSelectors")
				if len(ar.ClusterRoleSelectors) == 0 {
					errs = append(errs, field.Required(ap, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
				}
				for i := range ar.ClusterRoleSelectors {
					errs = append(errs, metav1validation.ValidateLabelSelector(&ar.ClusterRoleSelectors[i], metav1validation.LabelSelectorValidationOptions{}, ap.Index(i))...)
				}
			}
			return errs
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ClusterRole",
		Resource:         "clusterroles",
		SingularName:     "clusterrole",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList:          func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            createdAtTable[*rbacv1.ClusterRole](),
		StorageKeyPrefix: storagePrefix(gv, "clusterroles"),
	}
}

// validatePolicyRules is upstream's ValidatePolicyRule over every rule.
func validatePolicyRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range rules {
		p := field.NewPath("rules").Index(i)
		if len(r.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(r.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(r.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(r.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

func roleBindingResource(c clock) *Resource {
	gv := v1(rbacGroup)
	s := strategy[*rbacv1.RoleBinding]{behavior[*rbacv1.RoleBinding]{
		namespaced: true,
		name:       path.ValidatePathSegmentName,
		defaults:   func(b *rbacv1.RoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) },
		validate: func(b *rbacv1.RoleBinding) field.ErrorList {
			return validateBinding(b.RoleRef, b.Subjects, []string{"Role", "ClusterRole"}, true)
		},
		validateUpdate: func(obj, old *rbacv1.RoleBinding) field.ErrorList {
			return validateRoleRefUpdate(obj.RoleRef, old.RoleRef)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "RoleBinding",
		Resource:         "rolebindings",
		SingularName:     "rolebinding",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList:          func() runtime.Object { return &rbacv1.RoleBindingList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: bindingTable(c, func(b *rbacv1.RoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) {
			return b.RoleRef, b.Subjects
		}),
		StorageKeyPrefix: storagePrefix(gv, "rolebindings"),
	}
}

func clusterRoleBindingResource(c clock) *Resource {
	gv := v1(rbacGroup)
	s := strategy[*rbacv1.ClusterRoleBinding]{behavior[*rbacv1.ClusterRoleBinding]{
		name:     path.ValidatePathSegmentName,
		defaults: func(b *rbacv1.ClusterRoleBinding) { defaultBinding(&b.RoleRef, b.Subjects) },
		validate: func(b *rbacv1.ClusterRoleBinding) field.ErrorList {
			return validateBinding(b.RoleRef, b.Subjects, []string{"ClusterRole"}, false)
		},
		validateUpdate: func(obj, old *rbacv1.ClusterRoleBinding) field.ErrorList {
			return validateRoleRefUpdate(obj.RoleRef, old.RoleRef)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ClusterRoleBinding",
		Resource:         "clusterrolebindings",
		SingularName:     "clusterrolebinding",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList:          func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: bindingTable(c, func(b *rbacv1.ClusterRoleBinding) (rbacv1.RoleRef, []rbacv1.Subject) {
			return b.RoleRef, b.Subjects
		}),
		StorageKeyPrefix: storagePrefix(gv, "clusterrolebindings"),
	}
}

// defaultBinding is SetDefaults_RoleBinding/ClusterRoleBinding/Subject.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, kinds []string, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	rp := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(rp.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	validKind := false
	for _, k := range kinds {
		validKind = validKind || ref.Kind == k
	}
	if !validKind {
		errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(rp.Child("name"), ""))
	} else {
		for _, msg := range path.ValidatePathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(rp.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		sp := field.NewPath("subjects").Index(i)
		if s.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		}
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			if s.Name != "" {
				for _, msg := range path.ValidatePathSegmentName(s.Name, false) {
					errs = append(errs, field.Invalid(sp.Child("name"), s.Name, msg))
				}
			}
			if s.APIGroup != "" {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.APIGroup, []string{""}))
			}
			if !namespaced && s.Namespace == "" {
				errs = append(errs, field.Required(sp.Child("namespace"), ""))
			}
		case rbacv1.UserKind, rbacv1.GroupKind:
			if s.APIGroup != rbacv1.GroupName {
				errs = append(errs, field.NotSupported(sp.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
			}
		default:
			errs = append(errs, field.NotSupported(sp.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
		}
	}
	return errs
}

// validateRoleRefUpdate: a binding's role cannot change; delete and
// recreate it instead, so grants never silently widen.
func validateRoleRefUpdate(now, old rbacv1.RoleRef) field.ErrorList {
	if now != old {
		return field.ErrorList{field.Invalid(field.NewPath("roleRef"), now, "cannot change roleRef")}
	}
	return nil
}

// bindingTable is upstream's printRoleBinding / printClusterRoleBinding.
func bindingTable[T object](c clock, get func(T) (rbacv1.RoleRef, []rbacv1.Subject)) TableConvertor {
	return table[T]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Role", "string", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]),
			ageColumn(),
			wide(col("Users", "string", "Users in the roleBinding")),
			wide(col("Groups", "string", "Groups in the roleBinding")),
			wide(col("ServiceAccounts", "string", "ServiceAccounts in the roleBinding")),
		},
		cells: func(b T) []interface{} {
			ref, subjects := get(b)
			var users, groups, sas []string
			for _, s := range subjects {
				switch s.Kind {
				case rbacv1.UserKind:
					users = append(users, s.Name)
				case rbacv1.GroupKind:
					groups = append(groups, s.Name)
				case rbacv1.ServiceAccountKind:
					sas = append(sas, s.Namespace+"/"+s.Name)
				}
			}
			return []interface{}{b.GetName(), ref.Kind + "/" + ref.Name, c.since(b.GetCreationTimestamp()),
				strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
		},
	}
}

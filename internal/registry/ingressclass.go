package registry

import (
	networkingv1 "k8s.io/api/networking/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxIngressClassControllerLen is upstream's maxLenIngressClassController.
const maxIngressClassControllerLen = 250

func ingressClassResource(c clock) *Resource {
	gv := v1(networkingGroup)
	s := strategy[*networkingv1.IngressClass]{behavior[*networkingv1.IngressClass]{
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *networkingv1.IngressClass) bool { return semanticChanged(obj.Spec, old.Spec) },
		defaults: func(ic *networkingv1.IngressClass) {
			if p := ic.Spec.Parameters; p != nil && p.Scope == nil {
				p.Scope = ptrTo(networkingv1.IngressClassParametersReferenceScopeCluster)
			}
		},
		validate: validateIngressClass,
		validateUpdate: func(obj, old *networkingv1.IngressClass) field.ErrorList {
			return immutable(obj.Spec.Controller, old.Spec.Controller, field.NewPath("spec", "controller"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "IngressClass",
		Resource:         "ingressclasses",
		SingularName:     "ingressclass",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &networkingv1.IngressClass{} },
		NewList:          func() runtime.Object { return &networkingv1.IngressClassList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*networkingv1.IngressClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Controller", "string", "Controller that is responsible for handling this class"),
				col("Parameters", "string", "A reference to a resource with additional parameters"),
				ageColumn(),
			},
			cells: func(ic *networkingv1.IngressClass) []interface{} {
				params := "<none>"
				if p := ic.Spec.Parameters; p != nil {
					params = p.Kind
					if p.APIGroup != nil {
						params += "." + *p.APIGroup
					}
					params += "/" + p.Name
				}
				return []interface{}{ic.Name, ic.Spec.Controller, params, c.since(ic.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "ingressclasses"),
	}
}

func validateIngressClass(ic *networkingv1.IngressClass) field.ErrorList {
	var errs field.ErrorList
	cp := field.NewPath("spec", "controller")
	switch ctl := ic.Spec.Controller; {
	case ctl == "":
		errs = append(errs, field.Required(cp, ""))
	case len(ctl) > maxIngressClassControllerLen:
		errs = append(errs, field.TooLong(cp, "", maxIngressClassControllerLen))
	default:
		errs = append(errs, validation.IsDomainPrefixedPath(cp, ctl)...)
	}
	if p := ic.Spec.Parameters; p != nil {
		pp := field.NewPath("spec", "parameters")
		errs = append(errs, validateTypedLocalObjectReference(p.APIGroup, p.Kind, p.Name, pp)...)
		scope := ""
		if p.Scope != nil {
			scope = *p.Scope
		}
		switch scope {
		case networkingv1.IngressClassParametersReferenceScopeNamespace:
			if p.Namespace == nil {
				errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
			} else {
				for _, msg := range apivalidation.ValidateNamespaceName(*p.Namespace, false) {
					errs = append(errs, field.Invalid(pp.Child("namespace"), *p.Namespace, msg))
				}
			}
		case networkingv1.IngressClassParametersReferenceScopeCluster:
			if p.Namespace != nil {
				errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
			}
		default:
			errs = append(errs, field.NotSupported(pp.Child("scope"), scope, []string{
				networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}))
		}
	}
	return errs
}

package registry

import (
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func podDisruptionBudgetResource(c clock) *Resource {
	gv := v1(policyGroup)
	s := strategy[*policyv1.PodDisruptionBudget]{behavior[*policyv1.PodDisruptionBudget]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		specChanged: func(obj, old *policyv1.PodDisruptionBudget) bool { return semanticChanged(obj.Spec, old.Spec) },
		resetStatus: func(p *policyv1.PodDisruptionBudget) { p.Status = policyv1.PodDisruptionBudgetStatus{} },
		keepStatus:  func(obj, old *policyv1.PodDisruptionBudget) { obj.Status = old.Status },
		keepSpec:    func(obj, old *policyv1.PodDisruptionBudget) { obj.Spec = old.Spec },
		validate:    validatePDB,
		validateStatus: func(obj, _ *policyv1.PodDisruptionBudget) field.ErrorList {
			st := obj.Status
			return validateReplicaCounts(field.NewPath("status"),
				count{"disruptionsAllowed", st.DisruptionsAllowed}, count{"currentHealthy", st.CurrentHealthy}, count{"desiredHealthy", st.DesiredHealthy}, count{"expectedPods", st.ExpectedPods},
			)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PodDisruptionBudget",
		Resource:         "poddisruptionbudgets",
		SingularName:     "poddisruptionbudget",
		Namespaced:       true,
		ShortNames:       []string{"pdb"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:          func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*policyv1.PodDisruptionBudget]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Min Available", "string", "The minimum number of pods that must be available"),
				col("Max Unavailable", "string", "The maximum number of pods that may be unavailable"),
				col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time"),
				ageColumn(),
			},
			cells: func(p *policyv1.PodDisruptionBudget) []interface{} {
				return []interface{}{p.Name, intOrStringNA(p.Spec.MinAvailable), intOrStringNA(p.Spec.MaxUnavailable),
					int64(p.Status.DisruptionsAllowed), c.since(p.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "poddisruptionbudgets"),
	}
}

func intOrStringNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}

func validatePDB(p *policyv1.PodDisruptionBudget) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	if p.Spec.MinAvailable != nil && p.Spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(sp, p.Spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	errs = append(errs, validatePositiveIntOrPercent(p.Spec.MinAvailable, sp.Child("minAvailable"))...)
	errs = append(errs, validatePositiveIntOrPercent(p.Spec.MaxUnavailable, sp.Child("maxUnavailable"))...)
	if p.Spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(p.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, sp.Child("selector"))...)
	}
	if pol := p.Spec.UnhealthyPodEvictionPolicy; pol != nil {
		errs = append(errs, validateOneOf(*pol, sp.Child("unhealthyPodEvictionPolicy"), policyv1.IfHealthyBudget, policyv1.AlwaysAllow)...)
	}
	return errs
}

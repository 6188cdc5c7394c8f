package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's reserved range: values above this belong to system classes.
const (
	highestUserDefinablePriority = 1000000000
	systemPriorityClassPrefix    = "system-"
)

// SystemPriorityClasses are the only "system-" classes upstream accepts,
// with their values; every cluster has them.
func SystemPriorityClasses() map[string]int32 {
	return map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
}

func priorityClassResource(c clock) *Resource {
	gv := v1(schedulingGroup)
	s := strategy[*schedulingv1.PriorityClass]{behavior[*schedulingv1.PriorityClass]{
		name: apivalidation.NameIsDNSSubdomain,
		defaults: func(pc *schedulingv1.PriorityClass) {
			if pc.PreemptionPolicy == nil {
				pc.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
			}
		},
		validate: validatePriorityClass,
		validateUpdate: func(obj, old *schedulingv1.PriorityClass) field.ErrorList {
			var errs field.ErrorList
			if obj.Value != old.Value {
				errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
			}
			return append(errs, immutable(obj.PreemptionPolicy, old.PreemptionPolicy, field.NewPath("preemptionPolicy"))...)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PriorityClass",
		Resource:         "priorityclasses",
		SingularName:     "priorityclass",
		ShortNames:       []string{"pc"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:          func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*schedulingv1.PriorityClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Value", "integer", schedulingv1.PriorityClass{}.SwaggerDoc()["value"]),
				col("Global-Default", "boolean", schedulingv1.PriorityClass{}.SwaggerDoc()["globalDefault"]),
				ageColumn(),
				col("PreemptionPolicy", "string", schedulingv1.PriorityClass{}.SwaggerDoc()["preemptionPolicy"]),
			},
			cells: func(pc *schedulingv1.PriorityClass) []interface{} {
				policy := ""
				if pc.PreemptionPolicy != nil {
					policy = string(*pc.PreemptionPolicy)
				}
				return []interface{}{pc.Name, int64(pc.Value), pc.GlobalDefault, c.since(pc.CreationTimestamp), policy}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "priorityclasses"),
	}
}

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) {
		want, known := SystemPriorityClasses()[pc.Name]
		var reason string
		switch {
		case !known:
			reason = fmt.Sprintf("%v is not a known system priority class", pc.Name)
		case pc.Value != want:
			reason = fmt.Sprintf("value of %v PriorityClass must be %v", pc.Name, want)
		case pc.GlobalDefault:
			reason = fmt.Sprintf("globalDefault of %v PriorityClass must be false", pc.Name)
		}
		if reason != "" {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "name"),
				"priority class names with '"+systemPriorityClassPrefix+"' prefix are reserved for system use only. error: "+reason))
		}
	} else if pc.Value > highestUserDefinablePriority {
		errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", highestUserDefinablePriority)))
	}
	if pc.PreemptionPolicy != nil {
		errs = append(errs, validateOneOf(*pc.PreemptionPolicy, field.NewPath("preemptionPolicy"), corev1.PreemptLowerPriority, corev1.PreemptNever)...)
	}
	return errs
}

package registry

import (
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func runtimeClassResource(c clock) *Resource {
	gv := v1(nodeGroup)
	s := strategy[*nodev1.RuntimeClass]{behavior[*nodev1.RuntimeClass]{
		name:     apivalidation.NameIsDNSSubdomain,
		validate: validateRuntimeClass,
		validateUpdate: func(obj, old *nodev1.RuntimeClass) field.ErrorList {
			return immutable(obj.Handler, old.Handler, field.NewPath("handler"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "RuntimeClass",
		Resource:         "runtimeclasses",
		SingularName:     "runtimeclass",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &nodev1.RuntimeClass{} },
		NewList:          func() runtime.Object { return &nodev1.RuntimeClassList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*nodev1.RuntimeClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Handler", "string", nodev1.RuntimeClass{}.SwaggerDoc()["handler"]),
				ageColumn(),
			},
			cells: func(rc *nodev1.RuntimeClass) []interface{} {
				return []interface{}{rc.Name, rc.Handler, c.since(rc.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "runtimeclasses"),
	}
}

// validateRuntimeClass is upstream's ValidateRuntimeClass: the handler is
// a DNS label (the CRI names runtimes by it), the overhead a list of
// non-negative pod resources, scheduling a node selector and tolerations.
func validateRuntimeClass(rc *nodev1.RuntimeClass) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
		errs = append(errs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		op := field.NewPath("overhead", "podFixed")
		for name, q := range rc.Overhead.PodFixed {
			kp := op.Key(string(name))
			errs = append(errs, validateContainerResourceName(name, kp)...)
			errs = append(errs, validateQuantity(name, q, kp)...)
		}
	}
	if s := rc.Scheduling; s != nil {
		sp := field.NewPath("scheduling")
		errs = append(errs, metav1validation.ValidateLabels(s.NodeSelector, sp.Child("nodeSelector"))...)
		errs = append(errs, validateTolerations(s.Tolerations, sp.Child("tolerations"))...)
	}
	return errs
}

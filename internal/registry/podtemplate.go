package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podTemplateResource serves core/v1 podtemplates. Nothing in Myriad
// consumes them; they are served because clients (the conformance suite's
// chunking spec among them) create them as plain namespaced objects.
func podTemplateResource() *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.PodTemplate]{behavior[*corev1.PodTemplate]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		// Upstream's SetObjectDefaults_PodTemplate defaults the template's
		// spec exactly as a pod's.
		defaults: func(pt *corev1.PodTemplate) { defaultPodTemplate(&pt.Template) },
		validate: validatePodTemplateObject,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PodTemplate",
		Resource:         "podtemplates",
		SingularName:     "podtemplate",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.PodTemplate{} },
		NewList:          func() runtime.Object { return &corev1.PodTemplateList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		// Upstream's printPodTemplate: no Age column, and Containers and
		// Images are shown without -o wide.
		Table: table[*corev1.PodTemplate]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Containers", "string", "Names of each container in the template."),
				col("Images", "string", "Images referenced by each container in the template."),
				col("Pod Labels", "string", "The labels for the pod template."),
			},
			cells: func(pt *corev1.PodTemplate) []interface{} {
				names, images := templateContainers(&pt.Template)
				return []interface{}{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "podtemplates"),
	}
}

// validatePodTemplateObject is upstream's ValidatePodTemplate less object
// metadata (the strategy checks that): the template's labels and
// annotations and its spec as a pod's. Unlike a workload's template, any
// restart policy is allowed.
func validatePodTemplateObject(pt *corev1.PodTemplate) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("template")
	mp := p.Child("metadata")
	errs = append(errs, metav1validation.ValidateLabels(pt.Template.Labels, mp.Child("labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(pt.Template.Annotations, mp.Child("annotations"))...)
	sp := p.Child("spec")
	errs = append(errs, validatePodSpec(&pt.Template.Spec, sp)...)
	if len(pt.Template.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(sp.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

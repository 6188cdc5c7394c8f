package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func namespaceResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.Namespace]{behavior[*corev1.Namespace]{
		name: apivalidation.NameIsDNSLabel,
		// Finalizers are not a user's to change after creation: only the
		// finalize subresource edits them, so the namespace controller
		// decides when a namespace is gone.
		keepStatus: func(obj, old *corev1.Namespace) {
			obj.Status = old.Status
			obj.Spec.Finalizers = old.Spec.Finalizers
		},
		keepSpec:       func(obj, old *corev1.Namespace) { obj.Spec = old.Spec },
		defaults:       defaultNamespace,
		prepareCreate:  prepareNamespaceCreate,
		validate:       validateNamespace,
		validateStatus: validateNamespaceStatus,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Namespace",
		Resource:         "namespaces",
		SingularName:     "namespace",
		ShortNames:       []string{"ns"},
		Verbs:            verbsNoCollection(),
		Subresources:     []string{"status", "finalize"},
		New:              func() runtime.Object { return &corev1.Namespace{} },
		NewList:          func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(o runtime.Object) fields.Set { return namespaceFields(o.(*corev1.Namespace)) },
		Table: table[*corev1.Namespace]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Status", "string", "The status of the namespace"),
				ageColumn(),
			},
			cells: func(ns *corev1.Namespace) []interface{} {
				return []interface{}{ns.Name, string(ns.Status.Phase), c.since(ns.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "namespaces"),
	}
}

// defaultNamespace is SetDefaults_Namespace + SetDefaults_NamespaceStatus.
// The metadata.name label is re-applied on every write so it always
// matches the (immutable) name.
func defaultNamespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// prepareNamespaceCreate: a new namespace is Active and carries the
// kubernetes finalizer, which the namespace controller removes once the
// namespace's content is gone.
func prepareNamespaceCreate(ns *corev1.Namespace) {
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

func validateNamespace(ns *corev1.Namespace) field.ErrorList {
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// validateFinalizerName allows the standard "kubernetes" finalizer and any
// qualified name, as upstream.
func validateFinalizerName(name string, p *field.Path) field.ErrorList {
	if name == string(corev1.FinalizerKubernetes) {
		return nil
	}
	return apivalidation.ValidateFinalizerName(name, p)
}

func validateNamespaceStatus(obj, _ *corev1.Namespace) field.ErrorList {
	p := field.NewPath("status", "Phase")
	if obj.DeletionTimestamp.IsZero() {
		if obj.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(p, obj.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if obj.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(p, obj.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// namespaceFields includes the legacy "name" field upstream still serves.
func namespaceFields(ns *corev1.Namespace) fields.Set {
	return fields.Set{"status.phase": string(ns.Status.Phase), "name": ns.Name}
}

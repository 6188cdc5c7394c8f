package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// bindingResource serves core/v1 bindings, the legacy top-level form of
// pods/binding: a POST to the collection binds the pod the Binding names.
// Nothing is stored under it and there is no list kind; the API server
// serves its one verb (see the apiserver's pods.go).
func bindingResource() *Resource {
	gv := v1(coreGroup)
	return &Resource{
		GroupVersion:     gv,
		Kind:             "Binding",
		Resource:         "bindings",
		SingularName:     "binding",
		Namespaced:       true,
		Verbs:            []string{"create"},
		New:              func() runtime.Object { return &corev1.Binding{} },
		Strategy:         strategy[*corev1.Binding]{behavior[*corev1.Binding]{namespaced: true, name: apivalidation.NameIsDNSSubdomain}},
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            createdAtTable[*corev1.Binding](),
		StorageKeyPrefix: storagePrefix(gv, "bindings"),
	}
}

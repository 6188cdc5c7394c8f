package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

func serviceAccountResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.ServiceAccount]{behavior[*corev1.ServiceAccount]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ServiceAccount",
		Resource:         "serviceaccounts",
		SingularName:     "serviceaccount",
		Namespaced:       true,
		ShortNames:       []string{"sa"},
		Verbs:            allVerbs(),
		Subresources:     []string{"token"},
		New:              func() runtime.Object { return &corev1.ServiceAccount{} },
		NewList:          func() runtime.Object { return &corev1.ServiceAccountList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*corev1.ServiceAccount]{
			columns: []metav1.TableColumnDefinition{nameColumn(), col("Secrets", "string", corev1.ServiceAccount{}.SwaggerDoc()["secrets"]), ageColumn()},
			cells: func(sa *corev1.ServiceAccount) []interface{} {
				return []interface{}{sa.Name, int64(len(sa.Secrets)), c.since(sa.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "serviceaccounts"),
	}
}

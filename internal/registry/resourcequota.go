package registry

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func resourceQuotaResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.ResourceQuota]{behavior[*corev1.ResourceQuota]{
		namespaced:  true,
		name:        apivalidation.NameIsDNSSubdomain,
		resetStatus: func(q *corev1.ResourceQuota) { q.Status = corev1.ResourceQuotaStatus{} },
		keepStatus:  func(obj, old *corev1.ResourceQuota) { obj.Status = old.Status },
		keepSpec:    func(obj, old *corev1.ResourceQuota) { obj.Spec = old.Spec },
		validate:    validateResourceQuota,
		validateStatus: func(obj, _ *corev1.ResourceQuota) field.ErrorList {
			var errs field.ErrorList
			for k, q := range obj.Status.Hard {
				errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), field.NewPath("status", "hard").Key(string(k)))...)
			}
			for k, q := range obj.Status.Used {
				errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), field.NewPath("status", "used").Key(string(k)))...)
			}
			return errs
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ResourceQuota",
		Resource:         "resourcequotas",
		SingularName:     "resourcequota",
		Namespaced:       true,
		ShortNames:       []string{"quota"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &corev1.ResourceQuota{} },
		NewList:          func() runtime.Object { return &corev1.ResourceQuotaList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*corev1.ResourceQuota]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(), ageColumn(),
				col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
				col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
			},
			cells: func(q *corev1.ResourceQuota) []interface{} {
				req, lim := quotaColumns(q)
				return []interface{}{q.Name, c.since(q.CreationTimestamp), req, lim}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "resourcequotas"),
	}
}

func validateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	for k, v := range q.Spec.Hard {
		errs = append(errs, validateNonnegativeQuantity(v.Sign(), v.String(), sp.Child("hard").Key(string(k)))...)
	}
	valid := []corev1.ResourceQuotaScope{
		corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeBestEffort,
		corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity,
		corev1.ResourceQuotaScopeVolumeAttributesClass,
	}
	for i, sc := range q.Spec.Scopes {
		errs = append(errs, validateOneOf(sc, sp.Child("scopes").Index(i), valid...)...)
	}
	return errs
}

// quotaColumns renders "resource: used/hard" pairs sorted by name; the
// "limits.*" resources go to the Limit column, everything else to Request.
func quotaColumns(q *corev1.ResourceQuota) (request, limit string) {
	names := make([]string, 0, len(q.Status.Hard))
	for n := range q.Status.Hard {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		used, hard := q.Status.Used[corev1.ResourceName(n)], q.Status.Hard[corev1.ResourceName(n)]
		s := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, s)
		} else {
			req = append(req, s)
		}
	}
	return strings.Join(req, ", "), strings.Join(lim, ", ")
}

package registry

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func limitRangeResource(_ clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.LimitRange]{behavior[*corev1.LimitRange]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		defaults: func(lr *corev1.LimitRange) {
			for i := range lr.Spec.Limits {
				defaultLimitRangeItem(&lr.Spec.Limits[i])
			}
		},
		validate: validateLimitRange,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "LimitRange",
		Resource:         "limitranges",
		SingularName:     "limitrange",
		Namespaced:       true,
		ShortNames:       []string{"limits"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &corev1.LimitRange{} },
		NewList:          func() runtime.Object { return &corev1.LimitRangeList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            createdAtTable[*corev1.LimitRange](),
		StorageKeyPrefix: storagePrefix(gv, "limitranges"),
	}
}

// defaultLimitRangeItem is SetDefaults_LimitRangeItem: for containers the
// default limit falls back to max, the default request to the default
// limit, then to min.
func defaultLimitRangeItem(it *corev1.LimitRangeItem) {
	if it.Type != corev1.LimitTypeContainer {
		return
	}
	if it.Default == nil {
		it.Default = corev1.ResourceList{}
	}
	if it.DefaultRequest == nil {
		it.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range it.Max {
		if _, ok := it.Default[k]; !ok {
			it.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range it.Default {
		if _, ok := it.DefaultRequest[k]; !ok {
			it.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range it.Min {
		if _, ok := it.DefaultRequest[k]; !ok {
			it.DefaultRequest[k] = v.DeepCopy()
		}
	}
}

func validateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	var errs field.ErrorList
	for i, it := range lr.Spec.Limits {
		ip := field.NewPath("spec", "limits").Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(string(it.Type), ip.Child("type"))...)
		for _, l := range []struct {
			name string
			list corev1.ResourceList
		}{{"max", it.Max}, {"min", it.Min}, {"default", it.Default}, {"defaultRequest", it.DefaultRequest}, {"maxLimitRequestRatio", it.MaxLimitRequestRatio}} {
			for k, q := range l.list {
				errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), ip.Child(l.name).Key(string(k)))...)
			}
		}
		for k, minQ := range it.Min {
			if maxQ, ok := it.Max[k]; ok && minQ.Cmp(maxQ) > 0 {
				errs = append(errs, field.Invalid(ip.Child("min").Key(string(k)), minQ.String(), fmt.Sprintf("min value %s is greater than max value %s", minQ.String(), maxQ.String())))
			}
		}
		if it.Type == corev1.LimitTypePod && (len(it.Default) > 0 || len(it.DefaultRequest) > 0) {
			errs = append(errs, field.Forbidden(ip.Child("default"), "may not be specified when `type` is 'Pod'"))
		}
	}
	return errs
}

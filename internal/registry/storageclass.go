package registry

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's bounds on a provisioner's parameters.
const (
	maxProvisionerParameterSize = 256 * (1 << 10)
	maxProvisionerParameterLen  = 512
)

// The default-class annotations, as upstream's storageutil names them.
const (
	IsDefaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

// IsDefaultStorageClass reports whether meta carries upstream's default
// class annotation (or its beta spelling), as storageutil.IsDefaultAnnotation.
func IsDefaultStorageClass(meta metav1.Object) bool {
	a := meta.GetAnnotations()
	return a[IsDefaultStorageClassAnnotation] == "true" || a[betaIsDefaultStorageClassAnnotation] == "true"
}

func storageClassResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.StorageClass]{behavior[*storagev1.StorageClass]{
		name: apivalidation.NameIsDNSSubdomain,
		defaults: func(sc *storagev1.StorageClass) {
			if sc.ReclaimPolicy == nil {
				sc.ReclaimPolicy = ptrTo(corev1.PersistentVolumeReclaimDelete)
			}
			if sc.VolumeBindingMode == nil {
				sc.VolumeBindingMode = ptrTo(storagev1.VolumeBindingImmediate)
			}
		},
		validate:       validateStorageClass,
		validateUpdate: validateStorageClassUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "StorageClass",
		Resource:         "storageclasses",
		SingularName:     "storageclass",
		ShortNames:       []string{"sc"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &storagev1.StorageClass{} },
		NewList:          func() runtime.Object { return &storagev1.StorageClassList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            storageClassTable(c),
		StorageKeyPrefix: storagePrefix(gv, "storageclasses"),
	}
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, validateProvisionerParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	if rp := sc.ReclaimPolicy; rp != nil && *rp != "" && *rp != corev1.PersistentVolumeReclaimDelete && *rp != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *rp, []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}))
	}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if *m != storagev1.VolumeBindingImmediate && *m != storagev1.VolumeBindingWaitForFirstConsumer {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}))
	}
	tp := field.NewPath("allowedTopologies")
	for i, term := range sc.AllowedTopologies {
		ip := tp.Index(i)
		if len(term.MatchLabelExpressions) == 0 {
			errs = append(errs, field.Required(ip, "must have at least one label expression"))
		}
		for j, req := range term.MatchLabelExpressions {
			rp := ip.Child("matchLabelExpressions").Index(j)
			errs = append(errs, metav1validation.ValidateLabelName(req.Key, rp.Child("key"))...)
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(rp.Child("values"), "must specify as least one value"))
			}
			for k, v := range req.Values {
				for _, msg := range validation.IsValidLabelValue(v) {
					errs = append(errs, field.Invalid(rp.Child("values").Index(k), v, msg))
				}
			}
		}
	}
	return errs
}

// validateStorageClassUpdate: what provisions a class's volumes never
// changes once volumes may have been provisioned from it.
func validateStorageClassUpdate(obj, old *storagev1.StorageClass) field.ErrorList {
	var errs field.ErrorList
	if !reflect.DeepEqual(obj.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if obj.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !reflect.DeepEqual(obj.ReclaimPolicy, old.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	return append(errs, immutable(obj.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

func validateProvisioner(prov string, p *field.Path) field.ErrorList {
	if prov == "" {
		return field.ErrorList{field.Required(p, prov)}
	}
	return validateQualifiedName(strings.ToLower(prov), p)
}

// validateProvisionerParameters is upstream's validateParameters, shared
// with VolumeAttributesClass (which needs at least one).
func validateProvisionerParameters(params map[string]string, allowEmpty bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(params) > maxProvisionerParameterLen {
		return append(errs, field.TooLong(p, "Provisioner Parameters exceeded max allowed", maxProvisionerParameterLen))
	}
	total := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(p, k, "field can not be empty."))
		}
		total += len(k) + len(v)
	}
	if total > maxProvisionerParameterSize {
		errs = append(errs, field.TooLong(p, "", maxProvisionerParameterSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(p, "must contain at least one key/value pair"))
	}
	return errs
}

// storageClassTable is upstream's printStorageClass: the default class's
// name reads "NAME (default)".
func storageClassTable(c clock) TableConvertor {
	return table[*storagev1.StorageClass]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Provisioner", "string", "Indicates the type of the provisioner."),
			col("ReclaimPolicy", "string", "Indicates the type of the reclaim policy."),
			col("VolumeBindingMode", "string", "Indicates when volume binding and dynamic provisioning should occur."),
			col("AllowVolumeExpansion", "string", "Indicates whether the storage class allow volume expand."),
			ageColumn(),
		},
		cells: func(sc *storagev1.StorageClass) []interface{} {
			name := sc.Name
			if IsDefaultStorageClass(sc) {
				name += " (default)"
			}
			reclaim := string(corev1.PersistentVolumeReclaimDelete)
			if sc.ReclaimPolicy != nil {
				reclaim = string(*sc.ReclaimPolicy)
			}
			mode := string(storagev1.VolumeBindingImmediate)
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			expand := false
			if sc.AllowVolumeExpansion != nil {
				expand = *sc.AllowVolumeExpansion
			}
			return []interface{}{name, sc.Provisioner, reclaim, mode, expand, c.since(sc.CreationTimestamp)}
		},
	}
}

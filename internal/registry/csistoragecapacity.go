package registry

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func csiStorageCapacityResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.CSIStorageCapacity]{behavior[*storagev1.CSIStorageCapacity]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		validate:   validateCSIStorageCapacity,
		validateUpdate: func(obj, old *storagev1.CSIStorageCapacity) field.ErrorList {
			errs := immutable(obj.StorageClassName, old.StorageClassName, field.NewPath("storageClassName"))
			return append(errs, immutable(obj.NodeTopology, old.NodeTopology, field.NewPath("nodeTopology"))...)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "CSIStorageCapacity",
		Resource:         "csistoragecapacities",
		SingularName:     "csistoragecapacity",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
		NewList:          func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*storagev1.CSIStorageCapacity]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("StorageClassName", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]),
				col("Capacity", "string", storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]),
				ageColumn(),
			},
			cells: func(csc *storagev1.CSIStorageCapacity) []interface{} {
				capacity := "<unset>"
				if csc.Capacity != nil {
					capacity = csc.Capacity.String()
				}
				return []interface{}{csc.Name, csc.StorageClassName, capacity, c.since(csc.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "csistoragecapacities"),
	}
}

func validateCSIStorageCapacity(csc *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(csc.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(csc.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), csc.StorageClassName, msg))
	}
	for name, q := range map[string]*resource.Quantity{"capacity": csc.Capacity, "maximumVolumeSize": csc.MaximumVolumeSize} {
		if q != nil && q.Sign() < 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), q.String(), apivalidation.IsNegativeErrorMsg))
		}
	}
	return errs
}

func volumeAttributesClassResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.VolumeAttributesClass]{behavior[*storagev1.VolumeAttributesClass]{
		name: apivalidation.NameIsDNSSubdomain,
		validate: func(vac *storagev1.VolumeAttributesClass) field.ErrorList {
			errs := validateCSIDriverName(vac.DriverName, field.NewPath("driverName"))
			return append(errs, validateProvisionerParameters(vac.Parameters, false, field.NewPath("parameters"))...)
		},
		validateUpdate: func(obj, old *storagev1.VolumeAttributesClass) field.ErrorList {
			var errs field.ErrorList
			if obj.DriverName != old.DriverName {
				errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
			}
			if semanticChanged(obj.Parameters, old.Parameters) {
				errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
			}
			return errs
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "VolumeAttributesClass",
		Resource:         "volumeattributesclasses",
		SingularName:     "volumeattributesclass",
		ShortNames:       []string{"vac"},
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		NewList:          func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*storagev1.VolumeAttributesClass]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("DriverName", "string", storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]),
				ageColumn(),
			},
			cells: func(vac *storagev1.VolumeAttributesClass) []interface{} {
				return []interface{}{vac.Name, vac.DriverName, c.since(vac.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "volumeattributesclasses"),
	}
}

package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func persistentVolumeClaimResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.PersistentVolumeClaim]{behavior[*corev1.PersistentVolumeClaim]{
		namespaced: true,
		name:       apivalidation.NameIsDNSSubdomain,
		// A new claim reads back as Pending: upstream stores an empty
		// status and defaulting fills the phase on every read.
		resetStatus: func(pvc *corev1.PersistentVolumeClaim) { pvc.Status = corev1.PersistentVolumeClaimStatus{} },
		keepStatus:  func(obj, old *corev1.PersistentVolumeClaim) { obj.Status = old.Status },
		keepSpec:    func(obj, old *corev1.PersistentVolumeClaim) { obj.Spec = old.Spec },
		defaults: func(pvc *corev1.PersistentVolumeClaim) {
			if pvc.Status.Phase == "" {
				pvc.Status.Phase = corev1.ClaimPending
			}
			defaultPVCSpec(&pvc.Spec)
		},
		validate: func(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
			return validatePVCSpec(&pvc.Spec, field.NewPath("spec"))
		},
		validateUpdate: validatePVCUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PersistentVolumeClaim",
		Resource:         "persistentvolumeclaims",
		SingularName:     "persistentvolumeclaim",
		Namespaced:       true,
		ShortNames:       []string{"pvc"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:          func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            pvcTable(c),
		StorageKeyPrefix: storagePrefix(gv, "persistentvolumeclaims"),
	}
}

// defaultPVCSpec is SetDefaults_PersistentVolumeClaimSpec, also applied to
// stateful sets' claim templates.
func defaultPVCSpec(s *corev1.PersistentVolumeClaimSpec) {
	if s.VolumeMode == nil {
		s.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
}

func validatePVCSpec(s *corev1.PersistentVolumeClaimSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAccessModes(s.AccessModes, p.Child("accessModes"), "at least 1 access mode is required")...)
	storagePath := p.Child("resources", "requests").Key(string(corev1.ResourceStorage))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Sign() <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), "must be greater than zero"))
	}
	if s.StorageClassName != nil && *s.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(*s.StorageClassName, p.Child("storageClassName"))...)
	}
	if s.VolumeMode != nil {
		errs = append(errs, validateOneOf(*s.VolumeMode, p.Child("volumeMode"), corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)...)
	}
	return errs
}

// validatePVCUpdate: a claim's spec is immutable except that a bound claim
// may grow its storage request and change its volume attributes class, and
// the binder may fill in volumeName.
func validatePVCUpdate(obj, old *corev1.PersistentVolumeClaim) field.ErrorList {
	clone := obj.Spec.DeepCopy()
	if old.Spec.VolumeName == "" {
		clone.VolumeName = old.Spec.VolumeName
	}
	clone.VolumeAttributesClassName = old.Spec.VolumeAttributesClassName
	if old.Status.Phase == corev1.ClaimBound {
		clone.Resources.Requests = old.Spec.Resources.Requests
	}
	if semanticChanged(*clone, old.Spec) {
		return field.ErrorList{field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims")}
	}
	newQ, oldQ := obj.Spec.Resources.Requests[corev1.ResourceStorage], old.Spec.Resources.Requests[corev1.ResourceStorage]
	if capQ, ok := old.Status.Capacity[corev1.ResourceStorage]; ok && newQ.Cmp(oldQ) < 0 && newQ.Cmp(capQ) < 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity")}
	}
	return nil
}

// pvcTable is upstream's printPersistentVolumeClaim.
func pvcTable(c clock) TableConvertor {
	return table[*corev1.PersistentVolumeClaim]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Status", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
			col("Volume", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
			col("Capacity", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
			col("Access Modes", "string", corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
			col("StorageClass", "string", "StorageClass of the pvc"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
			ageColumn(),
			wide(col("VolumeMode", "string", corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"])),
		},
		cells: func(pvc *corev1.PersistentVolumeClaim) []interface{} {
			phase := string(pvc.Status.Phase)
			if pvc.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			capacity, modes := "", ""
			// Capacity and modes are the bound volume's, shown once bound.
			if pvc.Spec.VolumeName != "" {
				modes = accessModesString(pvc.Status.AccessModes)
				q := pvc.Status.Capacity[corev1.ResourceStorage]
				capacity = q.String()
			}
			class, vac := "", ""
			if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			}
			if pvc.Spec.VolumeAttributesClassName != nil {
				vac = *pvc.Spec.VolumeAttributesClassName
			}
			return []interface{}{
				pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, unsetIfEmpty(vac),
				c.since(pvc.CreationTimestamp), volumeModeString(pvc.Spec.VolumeMode),
			}
		},
	}
}

package registry

import (
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxAttachedVolumeMetadataSize bounds status.attachmentMetadata (256 kB).
const maxAttachedVolumeMetadataSize = 256 * (1 << 10)

func volumeAttachmentResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.VolumeAttachment]{behavior[*storagev1.VolumeAttachment]{
		name:        apivalidation.NameIsDNSSubdomain,
		resetStatus: func(va *storagev1.VolumeAttachment) { va.Status = storagev1.VolumeAttachmentStatus{} },
		keepStatus:  func(obj, old *storagev1.VolumeAttachment) { obj.Status = old.Status },
		keepSpec:    func(obj, old *storagev1.VolumeAttachment) { obj.Spec = old.Spec },
		validate:    validateVolumeAttachment,
		validateUpdate: func(obj, old *storagev1.VolumeAttachment) field.ErrorList {
			if semanticChanged(obj.Spec, old.Spec) {
				return field.ErrorList{field.Invalid(field.NewPath("spec"), obj.Spec, "field is immutable")}
			}
			return nil
		},
		validateStatus: func(obj, _ *storagev1.VolumeAttachment) field.ErrorList {
			return validateVolumeAttachmentStatus(&obj.Status, field.NewPath("status"))
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "VolumeAttachment",
		Resource:         "volumeattachments",
		SingularName:     "volumeattachment",
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &storagev1.VolumeAttachment{} },
		NewList:          func() runtime.Object { return &storagev1.VolumeAttachmentList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*storagev1.VolumeAttachment]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Attacher", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["attacher"]),
				col("PV", "string", storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]),
				col("Node", "string", storagev1.VolumeAttachmentSpec{}.SwaggerDoc()["nodeName"]),
				col("Attached", "boolean", storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]),
				ageColumn(),
			},
			cells: func(va *storagev1.VolumeAttachment) []interface{} {
				pv := ""
				if va.Spec.Source.PersistentVolumeName != nil {
					pv = *va.Spec.Source.PersistentVolumeName
				}
				return []interface{}{va.Name, va.Spec.Attacher, pv, va.Spec.NodeName, va.Status.Attached, c.since(va.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "volumeattachments"),
	}
}

// validateVolumeAttachment is upstream's ValidateVolumeAttachmentV1: the
// attacher is a CSI driver name, the source exactly one of a PV name and
// an inline spec.
func validateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	sp := field.NewPath("spec")
	errs := validateCSIDriverName(va.Spec.Attacher, sp.Child("attacher"))
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(sp.Child("nodeName"), va.Spec.NodeName, msg))
	}
	src, srcPath := va.Spec.Source, sp.Child("source")
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(srcPath, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil && *src.PersistentVolumeName == "":
		errs = append(errs, field.Required(srcPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		for _, msg := range apivalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			errs = append(errs, field.Invalid(srcPath.Child("persistentVolumeName"), *src.PersistentVolumeName, msg))
		}
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI == nil:
		errs = append(errs, field.Required(srcPath.Child("inlineVolumeSpec", "csi"), "a CSI volume source is required"))
	}
	return append(errs, validateVolumeAttachmentStatus(&va.Status, field.NewPath("status"))...)
}

func validateVolumeAttachmentStatus(s *storagev1.VolumeAttachmentStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range s.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(p.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	for name, e := range map[string]*storagev1.VolumeError{"attachError": s.AttachError, "detachError": s.DetachError} {
		if e != nil && len(e.Message) > maxVolumeErrorMsgLen {
			errs = append(errs, field.TooLong(p.Child(name, "message"), "", maxVolumeErrorMsgLen))
		}
	}
	return errs
}

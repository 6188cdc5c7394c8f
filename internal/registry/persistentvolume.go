package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func persistentVolumeResource(c clock) *Resource {
	gv := v1(coreGroup)
	s := strategy[*corev1.PersistentVolume]{behavior[*corev1.PersistentVolume]{
		name:        apivalidation.NameIsDNSSubdomain,
		resetStatus: func(pv *corev1.PersistentVolume) { pv.Status = corev1.PersistentVolumeStatus{} },
		keepStatus:  func(obj, old *corev1.PersistentVolume) { obj.Status = old.Status },
		keepSpec: func(obj, old *corev1.PersistentVolume) {
			obj.Spec = old.Spec
			// The phase's transition time is the server's to record.
			if obj.Status.Phase != old.Status.Phase && (obj.Status.LastPhaseTransitionTime == nil ||
				obj.Status.LastPhaseTransitionTime.Equal(old.Status.LastPhaseTransitionTime)) {
				obj.Status.LastPhaseTransitionTime = ptrTo(metav1.NewTime(c()))
			}
		},
		defaults: defaultPersistentVolume,
		prepareCreate: func(pv *corev1.PersistentVolume) {
			pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumePending, LastPhaseTransitionTime: ptrTo(metav1.NewTime(c()))}
		},
		validate:       validatePersistentVolume,
		validateUpdate: validatePersistentVolumeUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "PersistentVolume",
		Resource:         "persistentvolumes",
		SingularName:     "persistentvolume",
		ShortNames:       []string{"pv"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:          func() runtime.Object { return &corev1.PersistentVolumeList{} },
		Strategy:         s,
		Status:           statusOf(s),
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            persistentVolumeTable(c),
		StorageKeyPrefix: storagePrefix(gv, "persistentvolumes"),
	}
}

func defaultPersistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
}

func pvSourceCount(s *corev1.PersistentVolumeSource) int {
	n := 0
	for _, set := range []bool{
		s.GCEPersistentDisk != nil, s.AWSElasticBlockStore != nil, s.HostPath != nil, s.Glusterfs != nil,
		s.NFS != nil, s.RBD != nil, s.ISCSI != nil, s.Cinder != nil, s.CephFS != nil, s.FC != nil,
		s.Flocker != nil, s.FlexVolume != nil, s.AzureFile != nil, s.VsphereVolume != nil, s.Quobyte != nil,
		s.AzureDisk != nil, s.PhotonPersistentDisk != nil, s.PortworxVolume != nil, s.ScaleIO != nil,
		s.Local != nil, s.StorageOS != nil, s.CSI != nil,
	} {
		if set {
			n++
		}
	}
	return n
}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path, requiredMsg string) field.ErrorList {
	if len(modes) == 0 {
		return field.ErrorList{field.Required(p, requiredMsg)}
	}
	var errs field.ErrorList
	valid := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}
	for _, m := range modes {
		errs = append(errs, validateOneOf(m, p, valid...)...)
	}
	return errs
}

func validatePersistentVolume(pv *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	sp := field.NewPath("spec")
	errs = append(errs, validateAccessModes(pv.Spec.AccessModes, sp.Child("accessModes"), "")...)
	if len(pv.Spec.Capacity) == 0 {
		errs = append(errs, field.Required(sp.Child("capacity"), ""))
	}
	if _, ok := pv.Spec.Capacity[corev1.ResourceStorage]; !ok || len(pv.Spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(sp.Child("capacity"), pv.Spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for name, q := range pv.Spec.Capacity {
		errs = append(errs, validateNonnegativeQuantity(q.Sign(), q.String(), sp.Child("capacity").Key(string(name)))...)
	}
	switch pvSourceCount(&pv.Spec.PersistentVolumeSource) {
	case 0:
		errs = append(errs, field.Required(sp, "must specify a volume type"))
	case 1:
	default:
		errs = append(errs, field.Forbidden(sp, "may not specify more than 1 volume type"))
	}
	errs = append(errs, validateOneOf(pv.Spec.PersistentVolumeReclaimPolicy, sp.Child("persistentVolumeReclaimPolicy"),
		corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)...)
	if pv.Spec.VolumeMode != nil {
		errs = append(errs, validateOneOf(*pv.Spec.VolumeMode, sp.Child("volumeMode"), corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)...)
	}
	if pv.Spec.StorageClassName != "" {
		errs = append(errs, validateDNS1123Subdomain(pv.Spec.StorageClassName, sp.Child("storageClassName"))...)
	}
	return errs
}

func validatePersistentVolumeUpdate(obj, old *corev1.PersistentVolume) field.ErrorList {
	var errs field.ErrorList
	if semanticChanged(obj.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"), "spec.persistentvolumesource is immutable after creation"))
	}
	errs = append(errs, immutable(obj.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		errs = append(errs, immutable(obj.Spec.NodeAffinity, old.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
	}
	return errs
}

// accessModesString is upstream's GetAccessModesAsString: short names in a
// fixed order, each once.
func accessModesString(modes []corev1.PersistentVolumeAccessMode) string {
	has := map[corev1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func volumeModeString(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

func unsetIfEmpty(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

// persistentVolumeTable is upstream's printPersistentVolume.
func persistentVolumeTable(c clock) TableConvertor {
	spec := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	return table[*corev1.PersistentVolume]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Capacity", "string", spec["capacity"]),
			col("Access Modes", "string", spec["accessModes"]),
			col("Reclaim Policy", "string", spec["persistentVolumeReclaimPolicy"]),
			col("Status", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
			col("Claim", "string", spec["claimRef"]),
			col("StorageClass", "string", "StorageClass of the pv"),
			col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
			col("Reason", "string", corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
			ageColumn(),
			wide(col("VolumeMode", "string", spec["volumeMode"])),
		},
		cells: func(pv *corev1.PersistentVolume) []interface{} {
			claim := ""
			if r := pv.Spec.ClaimRef; r != nil {
				claim = r.Namespace + "/" + r.Name
			}
			capacity := pv.Spec.Capacity[corev1.ResourceStorage]
			phase := string(pv.Status.Phase)
			if pv.DeletionTimestamp != nil {
				phase = "Terminating"
			}
			vac := ""
			if pv.Spec.VolumeAttributesClassName != nil {
				vac = *pv.Spec.VolumeAttributesClassName
			}
			return []interface{}{
				pv.Name, capacity.String(), accessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
				phase, claim, pv.Spec.StorageClassName, unsetIfEmpty(vac), pv.Status.Reason, c.since(pv.CreationTimestamp),
				volumeModeString(pv.Spec.VolumeMode),
			}
		},
	}
}

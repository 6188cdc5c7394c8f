package registry

import (
	"fmt"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Upstream's limits: a CSI driver name is at most 63 characters, a node's
// ID for a driver at most 192; service account tokens requested for a
// driver live between ten minutes and 2^32 seconds.
const (
	maxCSIDriverNameLen  = 63
	maxCSINodeIDLen      = 192
	minTokenAgeSeconds   = 10 * 60
	maxTokenAgeSeconds   = 1 << 32
	maxVolumeErrorMsgLen = 1024
)

func csiDriverResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.CSIDriver]{behavior[*storagev1.CSIDriver]{
		name:     apivalidation.NameIsDNSSubdomain,
		defaults: defaultCSIDriver,
		validate: validateCSIDriver,
		validateUpdate: func(obj, old *storagev1.CSIDriver) field.ErrorList {
			sp := field.NewPath("spec")
			errs := immutable(obj.Spec.AttachRequired, old.Spec.AttachRequired, sp.Child("attachRequired"))
			return append(errs, immutable(obj.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, sp.Child("volumeLifecycleModes"))...)
		},
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "CSIDriver",
		Resource:         "csidrivers",
		SingularName:     "csidriver",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &storagev1.CSIDriver{} },
		NewList:          func() runtime.Object { return &storagev1.CSIDriverList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            csiDriverTable(c),
		StorageKeyPrefix: storagePrefix(gv, "csidrivers"),
	}
}

// defaultCSIDriver is SetDefaults_CSIDriver with every feature gate of
// v1.34 on.
func defaultCSIDriver(d *storagev1.CSIDriver) {
	s := &d.Spec
	if s.AttachRequired == nil {
		s.AttachRequired = ptrTo(true)
	}
	if s.PodInfoOnMount == nil {
		s.PodInfoOnMount = ptrTo(false)
	}
	if s.StorageCapacity == nil {
		s.StorageCapacity = ptrTo(false)
	}
	if s.FSGroupPolicy == nil {
		s.FSGroupPolicy = ptrTo(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
	if s.RequiresRepublish == nil {
		s.RequiresRepublish = ptrTo(false)
	}
	if s.SELinuxMount == nil {
		s.SELinuxMount = ptrTo(false)
	}
}

// validateCSIDriverName is upstream's ValidateCSIDriverName: a DNS
// subdomain of at most 63 characters, compared case-insensitively. An
// empty name is only Required (upstream adds an Invalid that says the same).
func validateCSIDriverName(name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		return append(errs, field.Required(p, ""))
	}
	if len(name) > maxCSIDriverNameLen {
		errs = append(errs, field.TooLong(p, "", maxCSIDriverNameLen))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func validateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	errs := validateCSIDriverName(d.Name, field.NewPath("name"))
	sp := field.NewPath("spec")
	s := &d.Spec
	for name, v := range map[string]*bool{"attachRequired": s.AttachRequired, "podInfoOnMount": s.PodInfoOnMount,
		"storageCapacity": s.StorageCapacity, "requiresRepublish": s.RequiresRepublish, "seLinuxMount": s.SELinuxMount} {
		if v == nil {
			errs = append(errs, field.Required(sp.Child(name), ""))
		}
	}
	if s.FSGroupPolicy != nil {
		errs = append(errs, validateOneOf(*s.FSGroupPolicy, sp.Child("fsGroupPolicy"),
			storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy, storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)...)
	}
	audiences := sets.New[string]()
	for i, tr := range s.TokenRequests {
		tp := sp.Child("tokenRequests").Index(i)
		if audiences.Has(tr.Audience) {
			errs = append(errs, field.Duplicate(tp.Child("audience"), tr.Audience))
		}
		audiences.Insert(tr.Audience)
		if e := tr.ExpirationSeconds; e != nil {
			switch {
			case *e < minTokenAgeSeconds:
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *e, "may not specify a duration less than 10 minutes"))
			case *e > maxTokenAgeSeconds:
				errs = append(errs, field.Invalid(tp.Child("expirationSeconds"), *e, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(sp.Child("volumeLifecycleModes"), m,
				[]string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}))
		}
	}
	return errs
}

// csiDriverTable is upstream's printCSIDriver.
func csiDriverTable(c clock) TableConvertor {
	return table[*storagev1.CSIDriver]{
		columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("AttachRequired", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["attachRequired"]),
			col("PodInfoOnMount", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["podInfoOnMount"]),
			col("StorageCapacity", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["storageCapacity"]),
			col("TokenRequests", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["tokenRequests"]),
			col("RequiresRepublish", "boolean", storagev1.CSIDriverSpec{}.SwaggerDoc()["requiresRepublish"]),
			col("Modes", "string", storagev1.CSIDriverSpec{}.SwaggerDoc()["volumeLifecycleModes"]),
			ageColumn(),
		},
		cells: func(d *storagev1.CSIDriver) []interface{} {
			boolOr := func(b *bool, def bool) bool {
				if b == nil {
					return def
				}
				return *b
			}
			tokens := "<unset>"
			if d.Spec.TokenRequests != nil {
				auds := make([]string, 0, len(d.Spec.TokenRequests))
				for _, t := range d.Spec.TokenRequests {
					auds = append(auds, t.Audience)
				}
				tokens = strings.Join(auds, ",")
			}
			modes := make([]string, 0, len(d.Spec.VolumeLifecycleModes))
			for _, m := range d.Spec.VolumeLifecycleModes {
				modes = append(modes, string(m))
			}
			return []interface{}{
				d.Name, boolOr(d.Spec.AttachRequired, true), boolOr(d.Spec.PodInfoOnMount, false),
				boolOr(d.Spec.StorageCapacity, false), tokens, boolOr(d.Spec.RequiresRepublish, false),
				orNone(strings.Join(modes, ",")), c.since(d.CreationTimestamp),
			}
		},
	}
}

func csiNodeResource(c clock) *Resource {
	gv := v1(storageGroup)
	s := strategy[*storagev1.CSINode]{behavior[*storagev1.CSINode]{
		name:           apivalidation.NameIsDNSSubdomain,
		validate:       validateCSINode,
		validateUpdate: validateCSINodeUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "CSINode",
		Resource:         "csinodes",
		SingularName:     "csinode",
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &storagev1.CSINode{} },
		NewList:          func() runtime.Object { return &storagev1.CSINodeList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*storagev1.CSINode]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
				ageColumn(),
			},
			cells: func(n *storagev1.CSINode) []interface{} {
				return []interface{}{n.Name, int64(len(n.Spec.Drivers)), c.since(n.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "csinodes"),
	}
}

func validateCSINode(n *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	dp := field.NewPath("spec", "drivers")
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		ip := dp.Index(i)
		errs = append(errs, validateCSIDriverName(d.Name, ip.Child("name"))...)
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		switch {
		case d.NodeID == "":
			errs = append(errs, field.Required(ip.Child("nodeID"), ""))
		case len(d.NodeID) > maxCSINodeIDLen:
			errs = append(errs, field.Invalid(ip.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", maxCSINodeIDLen)))
		}
		keys := sets.New[string]()
		for j, k := range d.TopologyKeys {
			kp := ip.Child("topologyKeys").Index(j)
			if k == "" {
				errs = append(errs, field.Required(kp, ""))
			} else {
				errs = append(errs, validateQualifiedName(k, kp)...)
			}
			if keys.Has(k) {
				errs = append(errs, field.Duplicate(kp, k))
			}
			keys.Insert(k)
		}
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			errs = append(errs, validateNonnegative(*d.Allocatable.Count, ip.Child("allocatable", "count"))...)
		}
	}
	return errs
}

// validateCSINodeUpdate: a driver entry never changes for as long as the
// driver stays registered, but for its allocatable count (upstream's
// MutableCSINodeAllocatableCount, on in v1.34).
func validateCSINodeUpdate(obj, old *storagev1.CSINode) field.ErrorList {
	var errs field.ErrorList
	for _, od := range old.Spec.Drivers {
		for _, nd := range obj.Spec.Drivers {
			if nd.Name != od.Name {
				continue
			}
			nd.Allocatable, od.Allocatable = nil, nil
			errs = append(errs, immutable(nd, od, field.NewPath("spec", "drivers"))...)
		}
	}
	return errs
}

package registry

import (
	"bytes"
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// controllerRevisionResource serves apps/v1 controllerrevisions, the
// history objects upstream's DaemonSet and StatefulSet controllers keep.
// Myriad's controllers hash templates instead of writing them, so these are
// served for clients (kubectl rollout history, the conformance suite) that
// create and read them as plain namespaced objects.
func controllerRevisionResource(c clock) *Resource {
	gv := v1(appsGroup)
	s := strategy[*appsv1.ControllerRevision]{behavior[*appsv1.ControllerRevision]{
		namespaced:     true,
		name:           apivalidation.NameIsDNSSubdomain,
		validate:       validateControllerRevision,
		validateUpdate: validateControllerRevisionUpdate,
	}}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "ControllerRevision",
		Resource:         "controllerrevisions",
		SingularName:     "controllerrevision",
		Namespaced:       true,
		Verbs:            allVerbs(),
		New:              func() runtime.Object { return &appsv1.ControllerRevision{} },
		NewList:          func() runtime.Object { return &appsv1.ControllerRevisionList{} },
		Strategy:         s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		// Upstream's printControllerRevision.
		Table: table[*appsv1.ControllerRevision]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Controller", "string", "Controller of the object"),
				col("Revision", "number", appsv1.ControllerRevision{}.SwaggerDoc()["revision"]),
				ageColumn(),
			},
			cells: func(cr *appsv1.ControllerRevision) []interface{} {
				return []interface{}{cr.Name, controllerName(cr), cr.Revision, c.since(cr.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "controllerrevisions"),
	}
}

// controllerName is upstream's Controller cell: the controller owner
// reference as lower-case "kind.group/name", or "<none>".
func controllerName(obj metav1.Object) string {
	ref := metav1.GetControllerOf(obj)
	if ref == nil {
		return "<none>"
	}
	gk := schema.GroupKind{Kind: ref.Kind}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
		gk.Group = gv.Group
	}
	if gk.Kind == "" {
		return ref.Name
	}
	return strings.ToLower(gk.String()) + "/" + ref.Name
}

// validateControllerRevision is upstream's ValidateControllerRevision less
// object metadata (the strategy checks that). The v1 data is a
// RawExtension; upstream's nil check on the internal object is a check
// that the request carried data at all.
func validateControllerRevision(cr *appsv1.ControllerRevision) field.ErrorList {
	var errs field.ErrorList
	if cr.Data.Raw == nil && cr.Data.Object == nil {
		errs = append(errs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(errs, apivalidation.ValidateNonnegativeField(cr.Revision, field.NewPath("revision"))...)
}

// validateControllerRevisionUpdate: data is immutable; revision may change
// (upstream's controllers renumber a revision they reuse).
func validateControllerRevisionUpdate(cr, old *appsv1.ControllerRevision) field.ErrorList {
	if sameJSON(cr.Data.Raw, old.Data.Raw) {
		return nil
	}
	return immutable(cr.Data, old.Data, field.NewPath("data"))
}

// sameJSON reports whether a and b are byte-equal or equal once compacted,
// so a client resending stored data with other whitespace is not refused.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

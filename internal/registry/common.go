package registry

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
)

// Groups served, all at v1.
const (
	coreGroup         = ""
	appsGroup         = "apps"
	batchGroup        = "batch"
	certificatesGroup = "certificates.k8s.io"
	coordinationGroup = "coordination.k8s.io"
	discoveryGroup    = "discovery.k8s.io"
	eventsGroup       = "events.k8s.io"
	networkingGroup   = "networking.k8s.io"
	nodeGroup         = "node.k8s.io"
	policyGroup       = "policy"
	rbacGroup         = "rbac.authorization.k8s.io"
	schedulingGroup   = "scheduling.k8s.io"
	storageGroup      = "storage.k8s.io"
)

// v1 is the served version of group.
func v1(group string) schema.GroupVersion { return schema.GroupVersion{Group: group, Version: "v1"} }

// Verb sets as upstream discovery lists them. Functions, not variables, so
// no caller can alias and mutate a shared slice.
func allVerbs() []string {
	return []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
}

// namespaces cannot be deleted as a collection upstream.
func verbsNoCollection() []string {
	return []string{"create", "delete", "get", "list", "patch", "update", "watch"}
}

// storagePrefix is "/<group or core>/<resource>".
func storagePrefix(gv schema.GroupVersion, resource string) string {
	g := gv.Group
	if g == "" {
		g = "core"
	}
	return "/" + g + "/" + resource
}

// validateSelector validates a required label selector the way the
// workload validators do: non-empty, syntactically valid, and matching the
// pod template's labels.
// kind names the workload in the empty-selector message as upstream does
// (replica sets say "deployment" there too).
func validateWorkloadSelector(kind string, sel *metav1.LabelSelector, templateLabels map[string]string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	selPath := specPath.Child("selector")
	if sel == nil {
		return append(errs, field.Required(selPath, ""))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(selPath, sel, "empty selector is invalid for "+kind))
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return errs
	}
	if !s.Empty() && !s.Matches(labels.Set(templateLabels)) {
		errs = append(errs, field.Invalid(specPath.Child("template", "metadata", "labels"), templateLabels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateNonnegative is upstream's ValidateNonnegativeField for int32s.
func validateNonnegative(v int32, p *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), p)
}

// immutable is upstream's ValidateImmutableField.
func immutable(newVal, oldVal any, p *field.Path) field.ErrorList {
	return apivalidation.ValidateImmutableField(newVal, oldVal, p)
}

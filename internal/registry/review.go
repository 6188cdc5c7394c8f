package registry

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The review resources of authentication.k8s.io and authorization.k8s.io
// are questions, not objects: a POST carries the question and the answer
// comes back in the response's status. Nothing is stored and only create
// is served (the API server's reviews.go answers them); the registry
// holds their discovery entries and their validation, which is
// upstream's pkg/apis/authorization/validation.

const (
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
)

// reviewResource describes one create-only, never-stored review kind.
func reviewResource(group, kind, resource string, namespaced bool, newObj func() runtime.Object, validate func(runtime.Object) field.ErrorList) *Resource {
	gv := v1(group)
	return &Resource{
		GroupVersion:     gv,
		Kind:             kind,
		Resource:         resource,
		SingularName:     singularOf(resource),
		Namespaced:       namespaced,
		Verbs:            []string{"create"},
		New:              newObj,
		Strategy:         reviewStrategy{validate: validate},
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table:            reviewTable{},
		StorageKeyPrefix: storagePrefix(gv, resource),
	}
}

func singularOf(resource string) string { return resource[:len(resource)-1] }

func tokenReviewResource() *Resource {
	return reviewResource(authenticationGroup, "TokenReview", "tokenreviews", false,
		func() runtime.Object { return &authenticationv1.TokenReview{} }, nil)
}

func selfSubjectReviewResource() *Resource {
	return reviewResource(authenticationGroup, "SelfSubjectReview", "selfsubjectreviews", false,
		func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, nil)
}

func localSubjectAccessReviewResource() *Resource {
	return reviewResource(authorizationGroup, "LocalSubjectAccessReview", "localsubjectaccessreviews", true,
		func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} },
		func(o runtime.Object) field.ErrorList {
			return ValidateLocalSubjectAccessReview(o.(*authorizationv1.LocalSubjectAccessReview))
		})
}

func selfSubjectAccessReviewResource() *Resource {
	return reviewResource(authorizationGroup, "SelfSubjectAccessReview", "selfsubjectaccessreviews", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		func(o runtime.Object) field.ErrorList {
			return ValidateSelfSubjectAccessReview(o.(*authorizationv1.SelfSubjectAccessReview))
		})
}

func selfSubjectRulesReviewResource() *Resource {
	return reviewResource(authorizationGroup, "SelfSubjectRulesReview", "selfsubjectrulesreviews", false,
		func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, nil)
}

func subjectAccessReviewResource() *Resource {
	return reviewResource(authorizationGroup, "SubjectAccessReview", "subjectaccessreviews", false,
		func() runtime.Object { return &authorizationv1.SubjectAccessReview{} },
		func(o runtime.Object) field.ErrorList {
			return ValidateSubjectAccessReview(o.(*authorizationv1.SubjectAccessReview))
		})
}

// reviewStrategy is the Strategy of a review kind: nothing to prepare (the
// answer is computed, never stored) and upstream's validation. There is
// no update.
type reviewStrategy struct {
	validate func(runtime.Object) field.ErrorList
}

func (reviewStrategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (reviewStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (s reviewStrategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	if s.validate == nil {
		return nil
	}
	return s.validate(obj)
}

func (reviewStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return field.ErrorList{field.Forbidden(field.NewPath(""), "reviews cannot be updated")}
}

// reviewTable exists because every resource needs one; reviews are never
// listed, so it is only what a create with -o wide would print.
type reviewTable struct{}

func (reviewTable) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn()}
}

func (reviewTable) Cells(obj runtime.Object) []interface{} {
	if o, ok := obj.(metav1.Object); ok {
		return []interface{}{o.GetName()}
	}
	return []interface{}{""}
}

// ValidateSubjectAccessReviewSpec is upstream's: exactly one of
// resourceAttributes and nonResourceAttributes, a user or a group, and
// well-formed selectors.
func ValidateSubjectAccessReviewSpec(spec authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if len(spec.User) == 0 && len(spec.Groups) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("user"), spec.User, `at least one of user or group must be specified`))
	}
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
}

// ValidateSelfSubjectAccessReviewSpec is ValidateSubjectAccessReviewSpec
// without the subject, which is the caller.
func ValidateSelfSubjectAccessReviewSpec(spec authorizationv1.SelfSubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateAttributesChoice(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	return append(allErrs, validateResourceAttributes(spec.ResourceAttributes, field.NewPath("spec.resourceAttributes"))...)
}

func validateAttributesChoice(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ra != nil && nra != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("nonResourceAttributes"), nra, `cannot be specified in combination with resourceAttributes`))
	}
	if ra == nil && nra == nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("resourceAttributes"), nra, `exactly one of nonResourceAttributes or resourceAttributes must be specified`))
	}
	return allErrs
}

// ValidateSubjectAccessReview also requires empty metadata: the review is
// not an object anyone will read back.
func ValidateSubjectAccessReview(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateSelfSubjectAccessReview validates a SelfSubjectAccessReview.
func ValidateSelfSubjectAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSelfSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	return append(allErrs, validateEmptyMeta(sar.ObjectMeta, false)...)
}

// ValidateLocalSubjectAccessReview validates a LocalSubjectAccessReview:
// metadata holds only the namespace, the resource attributes name the
// same namespace, and non-resource attributes are refused (a namespace
// cannot grant access to a path).
func ValidateLocalSubjectAccessReview(sar *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	allErrs := ValidateSubjectAccessReviewSpec(sar.Spec, field.NewPath("spec"))
	allErrs = append(allErrs, validateEmptyMeta(sar.ObjectMeta, true)...)
	if sar.Spec.ResourceAttributes != nil && sar.Spec.ResourceAttributes.Namespace != sar.Namespace {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), sar.Spec.ResourceAttributes.Namespace, `must match metadata.namespace`))
	}
	if sar.Spec.NonResourceAttributes != nil {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), sar.Spec.NonResourceAttributes, `disallowed on this kind of request`))
	}
	return allErrs
}

func validateEmptyMeta(meta metav1.ObjectMeta, exceptNamespace bool) field.ErrorList {
	meta.ManagedFields = nil
	msg := `must be empty`
	if exceptNamespace {
		meta.Namespace = ""
		msg = `must be empty except for namespace`
	}
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), meta, msg)}
	}
	return nil
}

func validateResourceAttributes(ra *authorizationv1.ResourceAttributes, fldPath *field.Path) field.ErrorList {
	if ra == nil {
		return nil
	}
	var allErrs field.ErrorList
	if s := ra.FieldSelector; s != nil {
		p := fldPath.Child("fieldSelector")
		allErrs = append(allErrs, validateSelectorChoice(s.RawSelector, len(s.Requirements), p)...)
		// Unknown operators are allowed so a newer client's review can be
		// answered, as upstream.
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateFieldSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	if s := ra.LabelSelector; s != nil {
		p := fldPath.Child("labelSelector")
		allErrs = append(allErrs, validateSelectorChoice(s.RawSelector, len(s.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, req := range s.Requirements {
			allErrs = append(allErrs, metav1validation.ValidateLabelSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
		}
	}
	return allErrs
}

func validateSelectorChoice(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	switch {
	case len(raw) > 0 && requirements > 0:
		return field.ErrorList{field.Invalid(fldPath.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case len(raw) == 0 && requirements == 0:
		return field.ErrorList{field.Required(fldPath.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fldPath))}
	}
	return nil
}

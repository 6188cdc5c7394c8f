package patch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxJSONPatchOperations is upstream's limit on the operations of one JSON
// patch; more is answered with 413.
const MaxJSONPatchOperations = 10000

// Options tune Apply. The zero value is usable.
type Options struct {
	// Kind of the original object. Zero means the original's TypeMeta,
	// which objects read from storage may lack; one of the two is required.
	Kind schema.GroupVersionKind
	// FieldValidation is the request's fieldValidation: metav1.FieldValidationIgnore,
	// FieldValidationWarn or FieldValidationStrict. Empty means Warn, the
	// upstream default. Unknown and duplicate fields are dropped (Ignore),
	// reported as warnings (Warn) or rejected with 422 (Strict).
	FieldValidation string
	// Defaulter, when set, defaults the patched object, as decoding a request
	// body would.
	Defaulter runtime.ObjectDefaulter
}

// Result is a patched object and the warnings to send with the response.
type Result struct {
	// Object is a new object of the original's Go type, with TypeMeta set.
	// The original is not modified.
	Object runtime.Object
	// Warnings are field-validation warnings (FieldValidation Warn), in
	// upstream's wording, one per unknown or duplicate field.
	Warnings []string
}

// Apply applies patch, of the given type, to original and decodes the result
// into original's Go type.
//
// Supported types are JSON patch, merge patch and strategic merge patch; the
// last only for typed objects, since it needs the Go struct's patch tags
// (custom resources, as *unstructured.Unstructured, get 415 as upstream).
// Server-side apply is FieldManagers.Apply.
//
// Errors for the client are *apierrors.StatusError: 400 for a patch that is
// not valid JSON or not a valid patch document, 413 for a JSON patch of more
// than MaxJSONPatchOperations operations, 415 for an unsupported type, 422
// when the patch cannot be applied, when it changes apiVersion or kind, or
// when its result does not decode (strict-decoding failures included when
// FieldValidation is Strict). Apply does not panic on any input.
func Apply(patchType types.PatchType, original runtime.Object, patch []byte, opts Options) (res Result, err error) {
	defer func() {
		// The patch libraries are well fuzzed, but a request must never
		// take the server down; a panic is our bug, reported as a 500.
		if r := recover(); r != nil {
			res, err = Result{}, apierrors.NewInternalError(fmt.Errorf("applying %s patch: panic: %v", patchType, r))
		}
	}()
	if original == nil {
		return Result{}, fmt.Errorf("patch: nil original object")
	}
	gvk := opts.Kind
	if gvk.Empty() {
		gvk = original.GetObjectKind().GroupVersionKind()
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return Result{}, fmt.Errorf("patch: kind of %T unknown: set Options.Kind", original)
	}
	original = original.DeepCopyObject()
	original.GetObjectKind().SetGroupVersionKind(gvk)
	_, isUnstructured := original.(*unstructured.Unstructured)

	var p patcher
	switch patchType {
	case types.JSONPatchType:
		p = jsonPatch
	case types.MergePatchType:
		p = mergePatch
	case types.StrategicMergePatchType:
		if isUnstructured {
			return Result{}, unsupported(patchType, isUnstructured)
		}
		p = strategicPatch
	default:
		return Result{}, unsupported(patchType, isUnstructured)
	}
	d := &decoder{validation: opts.FieldValidation, gvk: gvk}
	obj, err := p(original, patch, d)
	if err != nil {
		return Result{}, err
	}
	if opts.Defaulter != nil {
		opts.Defaulter.Default(obj)
	}
	return Result{Object: obj, Warnings: d.warnings}, nil
}

// A patcher applies one kind of patch to original (a copy Apply owns, with
// TypeMeta set) and decodes the result through d.
type patcher func(original runtime.Object, patch []byte, d *decoder) (runtime.Object, error)

// unsupported is upstream's 415 for a patch type the resource does not take.
func unsupported(pt types.PatchType, isUnstructured bool) error {
	accepted := []string{string(types.JSONPatchType), string(types.MergePatchType)}
	if !isUnstructured {
		accepted = append(accepted, string(types.StrategicMergePatchType))
	}
	accepted = append(accepted, string(types.ApplyYAMLPatchType))
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s",
			strings.Join(accepted, ", ")),
	}}
}

// decoder turns patched documents into objects, collecting field-validation
// warnings and enforcing that apiVersion and kind did not change.
type decoder struct {
	validation string
	gvk        schema.GroupVersionKind
	// strict holds strict-decoding problems found in the patch itself
	// (duplicate fields), reported together with those of the result.
	strict   []error
	warnings []string
}

func (d *decoder) checkStrict() bool {
	return d.validation != metav1.FieldValidationIgnore
}

// checkKind rejects a patched document whose apiVersion or kind differ from
// the original's: a patch edits an object, it cannot turn it into another.
func (d *decoder) checkKind(apiVersion, kind interface{}) error {
	var errs field.ErrorList
	if av, _ := apiVersion.(string); av != d.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), apiVersion, fmt.Sprintf("must not be changed by a patch (was %q)", d.gvk.GroupVersion().String())))
	}
	if k, _ := kind.(string); k != d.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), kind, fmt.Sprintf("must not be changed by a patch (was %q)", d.gvk.Kind)))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(d.gvk.GroupKind(), "", errs)
	}
	return nil
}

// finish applies the field-validation directive to the strict-decoding
// errors of the result: warnings, or a 422 naming the patched document.
func (d *decoder) finish(patched func() string, strictErrs []error) error {
	all := append(d.strict, strictErrs...)
	if len(all) == 0 {
		return nil
	}
	switch d.validation {
	case metav1.FieldValidationIgnore:
		return nil
	case metav1.FieldValidationStrict:
		return invalidPatch(patched(), runtime.NewStrictDecodingError(all).Error())
	default:
		for _, e := range all {
			d.warnings = append(d.warnings, e.Error())
		}
		return nil
	}
}

// decodeJSON decodes a patched JSON document into a new object of into's
// type, for the JSON and merge patchers.
func (d *decoder) decodeJSON(data []byte, into runtime.Object) (runtime.Object, error) {
	var head struct {
		APIVersion interface{} `json:"apiVersion"`
		Kind       interface{} `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, invalidPatch(string(data), err.Error())
	}
	if err := d.checkKind(head.APIVersion, head.Kind); err != nil {
		return nil, err
	}
	if _, ok := into.(*unstructured.Unstructured); ok {
		out := &unstructured.Unstructured{}
		if err := out.UnmarshalJSON(data); err != nil {
			return nil, invalidPatch(string(data), err.Error())
		}
		return out, nil
	}
	out := newOfType(into)
	var strictErrs []error
	var err error
	if d.checkStrict() {
		strictErrs, err = unmarshalStrict(data, out)
	} else {
		err = unmarshalCaseSensitive(data, out)
	}
	if err != nil {
		return nil, invalidPatch(string(data), err.Error())
	}
	return out, d.finish(func() string { return string(data) }, strictErrs)
}

// newOfType returns a new zero object of obj's Go type.
func newOfType(obj runtime.Object) runtime.Object {
	return reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
}

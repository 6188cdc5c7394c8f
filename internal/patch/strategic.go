package patch

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	sigsjson "sigs.k8s.io/json"
)

// strategicPatch applies a strategic merge patch with the Go struct of the
// original as schema (its patchStrategy and patchMergeKey tags), on maps, as
// upstream does: no JSON round trip of the result.
func strategicPatch(original runtime.Object, patch []byte, d *decoder) (runtime.Object, error) {
	originalMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(original)
	if err != nil {
		return nil, fmt.Errorf("patch: converting %T to a map: %w", original, err)
	}
	patchMap := map[string]interface{}{}
	if d.checkStrict() {
		strictErrs, err := sigsjson.UnmarshalStrict(patch, &patchMap, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		d.strict = append(d.strict, strictErrs...)
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	// "null" decodes to a nil map, which the merge code treats as a patch
	// deleting everything; upstream rejects it as not an object.
	if patchMap == nil {
		return nil, apierrors.NewBadRequest("error decoding patch: the patch must be a JSON object")
	}

	schema, err := strategicpatch.NewPatchMetaFromStruct(newOfType(original))
	if err != nil {
		return nil, fmt.Errorf("patch: patch metadata of %T: %w", original, err)
	}
	patchedMap, err := strategicpatch.StrategicMergeMapPatchUsingLookupPatchMeta(originalMap, patchMap, schema)
	if err != nil {
		return nil, interpretStrategicMergePatchError(err)
	}
	if err := d.checkKind(patchedMap["apiVersion"], patchedMap["kind"]); err != nil {
		return nil, err
	}

	out := newOfType(original)
	err = runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(patchedMap, out, d.checkStrict())
	printed := func() string { return fmt.Sprintf("%+v", patchMap) }
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict {
			return nil, invalidPatch(printed(), err.Error())
		}
		return out, d.finish(printed, strictErr.Errors())
	}
	return out, d.finish(printed, nil)
}

// interpretStrategicMergePatchError maps the merge library's errors to status
// codes as upstream does for its sentinel errors; every other error comes
// from the patch's content (a list item without its merge key, a value of
// the wrong type) and is a 422 here, where upstream lets it become a 500.
func interpretStrategicMergePatchError(err error) error {
	switch {
	case errors.Is(err, mergepatch.ErrBadJSONDoc),
		errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList),
		errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys),
		errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList),
		errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat):
		return apierrors.NewBadRequest(err.Error())
	default:
		return unprocessable(err.Error())
	}
}

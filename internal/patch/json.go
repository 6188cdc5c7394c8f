package patch

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	sigsjson "sigs.k8s.io/json"
)

// The JSON patch (RFC 6902) and JSON merge patch (RFC 7386) patchers. Both
// work on the original's JSON encoding, so they serve typed objects and
// custom resources alike.
//
// A JSON patch's "copy" operations can grow a document exponentially; the
// library bounds them through its package variable
// jsonpatch.AccumulatedCopySizeLimit, which this package leaves alone: the
// API server sets it once at start-up, as upstream does.

func jsonPatch(original runtime.Object, patch []byte, d *decoder) (runtime.Object, error) {
	if d.checkStrict() {
		// Only duplicate fields can be found here: operations have no
		// schema beyond what DecodePatch checks.
		var ops []map[string]interface{}
		strictErrs, err := sigsjson.UnmarshalStrict(patch, &ops, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return nil, badRequest("error decoding patch: %v", err)
		}
		for _, e := range strictErrs {
			d.strict = append(d.strict, fmt.Errorf("json patch %w", e))
		}
	}
	ops, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if len(ops) > MaxJSONPatchOperations {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
			"The allowed maximum operations in a JSON patch is %d, got %d", MaxJSONPatchOperations, len(ops)))
	}
	if err := checkOps(ops); err != nil {
		return nil, err
	}
	doc, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("patch: encoding %T: %w", original, err)
	}
	patched, err := ops.Apply(doc)
	if err != nil {
		return nil, unprocessable(err.Error())
	}
	return d.decodeJSON(patched, original)
}

// checkOps rejects operations the library would crash on: replacing the
// whole document ("path": "") without a value (absent or null) dereferences
// a nil node in json-patch v4.13.
func checkOps(ops jsonpatch.Patch) error {
	for i, op := range ops {
		if op.Kind() != "replace" {
			continue
		}
		if path, err := op.Path(); err == nil && path == "" && op["value"] == nil {
			return unprocessable(fmt.Sprintf("replace operation %d: the value replacing the whole document must be an object", i))
		}
	}
	return nil
}

func mergePatch(original runtime.Object, patch []byte, d *decoder) (runtime.Object, error) {
	if d.checkStrict() {
		var v map[string]interface{}
		strictErrs, err := sigsjson.UnmarshalStrict(patch, &v, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return nil, badRequest("error decoding patch: %v", err)
		}
		d.strict = append(d.strict, strictErrs...)
	}
	doc, err := json.Marshal(original)
	if err != nil {
		return nil, fmt.Errorf("patch: encoding %T: %w", original, err)
	}
	patched, err := jsonpatch.MergePatch(doc, patch)
	if err != nil {
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return nil, unprocessable(err.Error())
	}
	return d.decodeJSON(patched, original)
}

func unmarshalStrict(data []byte, into interface{}) ([]error, error) {
	return sigsjson.UnmarshalStrict(data, into)
}

func unmarshalCaseSensitive(data []byte, into interface{}) error {
	return sigsjson.UnmarshalCaseSensitivePreserveInts(data, into)
}

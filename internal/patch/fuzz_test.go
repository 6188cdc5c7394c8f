package patch

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

var fuzzPatchTypes = []types.PatchType{types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType}

var fuzzValidation = []string{metav1.FieldValidationWarn, metav1.FieldValidationStrict, metav1.FieldValidationIgnore}

// FuzzApply feeds arbitrary patches of every type to Apply against a Pod, a
// Deployment and a custom resource. Whatever the input, Apply must not panic
// (it turns panics into 500s, so a 500 is a failure too), must answer with a
// StatusError, and on success must return the original's type and kind.
// The seed corpus is in testdata/fuzz/FuzzApply.
func FuzzApply(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), []byte(`[{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`))
	f.Add(uint8(1), uint8(1), uint8(0), []byte(`{"spec":{"replicas":3}}`))
	f.Add(uint8(2), uint8(0), uint8(1), []byte(`{"spec":{"containers":[{"name":"a","$patch":"delete"}]}}`))
	f.Add(uint8(2), uint8(1), uint8(1), []byte(`{"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"b"},{"name":"a"}]}}}}`))
	f.Add(uint8(1), uint8(2), uint8(2), []byte(`{"spec":{"size":null}}`))
	f.Fuzz(func(t *testing.T, pt, target, validation uint8, patch []byte) {
		originals := []runtime.Object{testPod(), testDeployment(), customResource()}
		original := originals[int(target)%len(originals)]
		patchType := fuzzPatchTypes[int(pt)%len(fuzzPatchTypes)]
		opts := Options{FieldValidation: fuzzValidation[int(validation)%len(fuzzValidation)]}

		r, err := Apply(patchType, original, patch, opts)
		if err != nil {
			var status apierrors.APIStatus
			if !errors.As(err, &status) {
				t.Fatalf("%s: error %v (%T) is not a StatusError", patchType, err, err)
			}
			if status.Status().Code == http.StatusInternalServerError {
				t.Fatalf("%s: %v", patchType, err)
			}
			return
		}
		if typeName(r.Object) != typeName(original) {
			t.Fatalf("%s: result %s, want %s", patchType, typeName(r.Object), typeName(original))
		}
		if got, want := r.Object.GetObjectKind().GroupVersionKind(), original.GetObjectKind().GroupVersionKind(); got != want {
			t.Fatalf("%s: result kind %v, want %v", patchType, got, want)
		}
	})
}

package patch

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Helpers that build the StatusErrors upstream's patch handler returns. All
// errors this package returns to a client are *apierrors.StatusError; plain
// errors signal a bug in the caller (an object without metadata, a kind the
// scheme does not know).

// badRequest is a 400.
func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// unprocessable is a 422 for a patch that is well-formed but cannot be
// applied (a failed JSON-patch test, a path that does not exist). Upstream
// builds it with NewGenericServerResponse, which hides msg in a cause behind
// "the server rejected our request due to an error in our request"; the
// status here has the same code, reason and cause, and msg as its message.
func unprocessable(msg string) error {
	err := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", msg, 0, false)
	err.ErrStatus.Message = msg
	return err
}

// invalidPatch is the 422 Invalid upstream returns when the patched document
// does not decode into the object's type: the field is "patch" and the value
// the patched document.
func invalidPatch(patched string, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
		field.Invalid(field.NewPath("patch"), patched, detail),
	})
}

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// statusFor turns any error into the metav1.Status a client receives.
func statusFor(err error) *metav1.Status {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		s := st.Status()
		s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return &s
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s := apierrors.NewTimeoutError("request did not complete within the allowed duration", 0).ErrStatus
		s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		return &s
	}
	s := apierrors.NewInternalError(err).ErrStatus
	s.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return &s
}

// writeError answers r with err as a metav1.Status in a format the client
// accepts (JSON when it accepts nothing we know).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	st := statusFor(err)
	if st.Code == 0 {
		st.Code = http.StatusInternalServerError
	}
	// A request whose client has gone (its context is canceled) failing
	// is not a server error worth an error log: nobody reads the answer.
	if st.Code >= 500 && st.Reason != metav1.StatusReasonTimeout && r.Context().Err() == nil {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	if st.Details != nil && st.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(st.Details.RetryAfterSeconds))
	}
	choice, ok := s.negotiateOutput(r, false)
	if !ok {
		choice = mediaChoice{info: s.codecs.json}
	}
	s.writeObject(w, r, int(st.Code), choice, st)
}

// storageError maps a store error on an object to the API error clients
// expect (404, 409 AlreadyExists, 409 Conflict, …).
func storageError(err error, gr schema.GroupResource, name string) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(gr, name)
	case errors.Is(err, storage.ErrExists):
		return apierrors.NewAlreadyExists(gr, name)
	case errors.Is(err, storage.ErrConflict):
		return conflictError(gr, name)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return apierrors.NewInternalError(err)
}

// conflictError is upstream's message for a stale update, which clients
// (and people) recognise.
func conflictError(gr schema.GroupResource, name string) error {
	return apierrors.NewConflict(gr, name, errors.New(optimisticLockMessage))
}

const optimisticLockMessage = "the object has been modified; please apply your changes to the latest version and try again"

func invalidError(gk schema.GroupKind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(gk, name, errs)
}

// writeObject encodes obj in the chosen format. obj must carry TypeMeta.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, choice mediaChoice, obj runtime.Object) {
	enc := choice.info.Serializer
	if choice.pretty && choice.info.PrettySerializer != nil {
		enc = choice.info.PrettySerializer
	}
	w.Header().Set("Content-Type", choice.info.MediaType)
	w.WriteHeader(code)
	if r.Method == http.MethodHead {
		return
	}
	if err := enc.Encode(obj, w); err != nil {
		// Headers are gone; all we can do is log and let the client see a
		// truncated body.
		s.log.Debug("encoding response failed", "path", r.URL.Path, "err", err)
	}
}

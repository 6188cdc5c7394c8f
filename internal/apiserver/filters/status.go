package filters

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WriteStatus writes status as a JSON metav1.Status with status.Code as the
// HTTP code (500 when unset). Kind and APIVersion are filled in, as clients
// need them to recognise the body as a Status.
func WriteStatus(w http.ResponseWriter, status *metav1.Status) {
	s := *status
	s.Kind, s.APIVersion = "Status", "v1"
	if s.Status == "" {
		s.Status = metav1.StatusFailure
	}
	if s.Code == 0 {
		s.Code = http.StatusInternalServerError
	}
	body, err := json.Marshal(&s)
	if err != nil {
		// Cannot happen for a Status; fall back to something clients parse.
		body = []byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","code":500}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	// Errors can echo request input; never let a browser sniff them as HTML.
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	w.Write(append(body, '\n'))
}

// WriteStatusError writes err as a Status: an apierrors status error as is,
// an expired request deadline as 504 Timeout, an oversized body as 413, and
// anything else as a 500 InternalError.
func WriteStatusError(w http.ResponseWriter, err error) {
	WriteStatus(w, StatusForError(err))
}

// StatusForError maps err to the Status WriteStatusError would write.
func StatusForError(err error) *metav1.Status {
	var apiStatus apierrors.APIStatus
	switch {
	case errors.As(err, &apiStatus):
		s := apiStatus.Status()
		return &s
	case errors.Is(err, context.DeadlineExceeded):
		s := apierrors.NewTimeoutError(fmt.Sprintf("request did not complete within requested timeout - %v", err), 0).ErrStatus
		return &s
	case errors.Is(err, ErrRequestBodyTooLarge):
		msg := err.Error()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			msg = fmt.Sprintf("limit is %d", mbe.Limit) // upstream's wording
		}
		s := apierrors.NewRequestEntityTooLargeError(msg).ErrStatus
		return &s
	}
	s := apierrors.NewInternalError(err).ErrStatus
	return &s
}

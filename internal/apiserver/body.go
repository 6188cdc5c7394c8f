package apiserver

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readBody reads a request body; the body-limit filter has already bounded
// it, and its error is passed on so the client gets 413.
func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", tooLarge.Limit))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	return data, nil
}

// fieldValidation is the fieldValidation query parameter: Strict, Warn
// (the default) or Ignore.
func fieldValidation(r *http.Request) (string, error) {
	v := r.URL.Query().Get("fieldValidation")
	switch v {
	case "":
		return "Warn", nil
	case "Strict", "Warn", "Ignore":
		return v, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of \"Ignore\", \"Warn\", or \"Strict\", got %q", v))
}

// decodeObject decodes data (in the request's Content-Type) as an object of
// gvk. Unknown or duplicate fields fail with Strict, become Warning headers
// with Warn, and are dropped with Ignore.
func (s *Server) decodeObject(w http.ResponseWriter, r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object) (runtime.Object, error) {
	if len(data) == 0 {
		return nil, apierrors.NewBadRequest("the request body is empty")
	}
	ct := r.Header.Get("Content-Type")
	mediaType := ""
	if ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil {
			return nil, unsupportedMediaType(ct)
		}
		mediaType = mt
	}
	info, ok := s.codecs.byContentType(mediaType)
	if _, custom := into.(*unstructured.Unstructured); !ok || (custom && info.MediaType == runtime.ContentTypeProtobuf) {
		return nil, unsupportedMediaType(ct)
	}
	validation, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	dec := info.Serializer
	if validation != "Ignore" && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj, got, err := dec.Decode(data, &gvk, into)
	if err != nil {
		if !runtime.IsStrictDecodingError(err) || obj == nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
		}
		if validation == "Strict" {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if strict, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range strict.Errors() {
				addWarning(w, e.Error())
			}
		}
	}
	if got != nil && (got.Kind != gvk.Kind || got.GroupVersion() != gvk.GroupVersion()) {
		if got.GroupVersion() != gvk.GroupVersion() {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion().String(), gvk.GroupVersion().String()))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, gvk.Kind))
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// decodeDeleteOptions decodes the optional body of a DELETE (DeleteOptions)
// or, when there is none, reads the same options from the query string.
// Never both, as upstream: decoding the query into the struct resets every
// option the query does not name, so a deletecollection's label selector
// in the query would wipe the dryRun or preconditions of its body.
func (s *Server) decodeDeleteOptions(r *http.Request, data []byte) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	if len(strings.TrimSpace(string(data))) > 0 {
		gvk := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		info := s.codecs.json
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
			if i, ok := s.codecs.byContentType(mt); ok {
				info = i
			}
		}
		obj, _, err := info.Serializer.Decode(data, &gvk, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding DeleteOptions: %v", err))
		}
		o, ok := obj.(*metav1.DeleteOptions)
		if !ok {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("expected DeleteOptions, got %T", obj))
		}
		return o, nil
	}
	if err := s.paramCodec.DecodeParameters(r.URL.Query(), optionsVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return opts, nil
}

// addWarning adds an RFC 7234 warning header, as upstream does for unknown
// fields under fieldValidation=Warn.
func addWarning(w http.ResponseWriter, msg string) {
	w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
}

func unsupportedMediaType(ct string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf; got %q", ct),
	}}
}

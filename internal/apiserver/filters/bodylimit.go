package filters

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultMaxRequestBodyBytes is upstream's limit on a request body (3 MiB):
// large enough for any sane object, small enough that a burst of oversized
// requests cannot exhaust memory.
const DefaultMaxRequestBodyBytes = 3 << 20

// ErrRequestBodyTooLarge is returned by the request body's Read once a body
// sent without Content-Length passes the limit. Handlers that get it (check
// with errors.Is or IsRequestBodyTooLarge; errors.As to *http.MaxBytesError
// works too and gives the limit) answer with WriteStatusError, which turns
// it into 413 RequestEntityTooLarge.
var ErrRequestBodyTooLarge = errors.New("request entity too large")

// IsRequestBodyTooLarge reports whether err comes from reading a body past
// the limit set by WithBodyLimit.
func IsRequestBodyTooLarge(err error) bool { return errors.Is(err, ErrRequestBodyTooLarge) }

// WithBodyLimit bounds request bodies to maxBytes (DefaultMaxRequestBodyBytes
// when maxBytes <= 0). A declared Content-Length over the limit is answered
// 413 before a byte of the body is read — the client, if it sent
// Expect: 100-continue, never sends it at all. A body of unknown length is
// cut off at the limit: its Read returns ErrRequestBodyTooLarge, and the
// server closes the connection after the response instead of draining it.
func WithBodyLimit(maxBytes int64) Filter {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxRequestBodyBytes
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > maxBytes {
				WriteStatus(w, &apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBytes)).ErrStatus)
				return
			}
			// A known length within the limit is already enforced by
			// net/http (it never reads past Content-Length), so only
			// unknown lengths need the wrapper.
			if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody {
				r.Body = &limitedBody{
					rc:    http.MaxBytesReader(w, r.Body, maxBytes),
					limit: maxBytes,
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// limitedBody makes http.MaxBytesReader's error also match our sentinel.
// MaxBytesReader is used underneath for its side effect: it tells the server
// to close the connection rather than read the rest of the oversized body.
type limitedBody struct {
	rc    io.ReadCloser
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = &bodyTooLargeError{mbe: mbe}
	}
	return n, err
}

// bodyTooLargeError matches both errors.Is(err, ErrRequestBodyTooLarge) and
// errors.As(err, **http.MaxBytesError), so handlers may test either.
type bodyTooLargeError struct{ mbe *http.MaxBytesError }

func (e *bodyTooLargeError) Error() string {
	return fmt.Sprintf("%v: limit is %d", ErrRequestBodyTooLarge, e.mbe.Limit)
}
func (e *bodyTooLargeError) Is(target error) bool { return target == ErrRequestBodyTooLarge }
func (e *bodyTooLargeError) Unwrap() error        { return e.mbe }

func (b *limitedBody) Close() error { return b.rc.Close() }

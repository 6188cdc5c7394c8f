package filters

import (
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WithPanicRecovery turns a panic in any later filter or handler into a 500
// InternalError Status and an error log with the stack, so one bad request
// cannot take the server (or its connection's other HTTP/2 streams) down.
// If the handler had already started the response, a Status can no longer
// be sent; the connection is aborted instead so the client sees a broken
// response rather than a truncated one that looks complete.
// http.ErrAbortHandler is passed through untouched: it is net/http's
// deliberate "abort this response" signal.
func WithPanicRecovery(logger *slog.Logger) Filter {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := record(w)
			defer func() {
				p := recover()
				if p == nil {
					return
				}
				if p == http.ErrAbortHandler {
					panic(p)
				}
				logger.ErrorContext(r.Context(), "panic serving request",
					"method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if rec.wroteHeader() {
					panic(http.ErrAbortHandler)
				}
				WriteStatus(rec, &apierrors.NewInternalError(fmt.Errorf("this request caused the apiserver to panic; look in the logs for details")).ErrStatus)
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

package filters

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultRequestTimeout is upstream's --request-timeout: the longest a
// non-long-running request may take.
const DefaultRequestTimeout = 60 * time.Second

// WithRequestDeadline gives every non-long-running request a context
// deadline: the ?timeout= the client asked for (client-go sends it), capped
// at maxTimeout (DefaultRequestTimeout when <= 0); a zero or larger timeout
// gets maxTimeout. A malformed timeout is a 400, as upstream.
//
// It only sets the deadline: handlers and the store honour ctx and answer
// (StatusForError maps context.DeadlineExceeded to 504 Timeout). Unlike
// upstream's timeout filter it does not race the handler with a second
// goroutine and a buffered writer — that costs a goroutine and a copy per
// request and still cannot stop a handler that ignores ctx.
// Long-running requests get no deadline; watches end by their own
// timeoutSeconds. Needs WithRequestInfo earlier in the chain.
func WithRequestDeadline(maxTimeout time.Duration) Filter {
	if maxTimeout <= 0 {
		maxTimeout = DefaultRequestTimeout
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(w, r)
			if info == nil {
				return
			}
			if info.IsLongRunning() {
				next.ServeHTTP(w, r)
				return
			}
			timeout := maxTimeout
			if s := r.URL.Query().Get("timeout"); s != "" {
				d, err := time.ParseDuration(s)
				if err != nil {
					WriteStatus(w, &apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL: %v", err)).ErrStatus)
					return
				}
				if d > 0 && d < maxTimeout {
					timeout = d
				}
			}
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

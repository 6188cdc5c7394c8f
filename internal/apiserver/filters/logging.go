package filters

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// WithLogging writes one debug-level line per request: method, path, verb,
// user, status, bytes, duration, user agent and client address. When debug
// logging is off it costs one Enabled check. It sits outside authentication
// so refused requests are logged too; the user is reported back to it by
// NoteUser.
func WithLogging(logger *slog.Logger) Filter {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !logger.Enabled(r.Context(), slog.LevelDebug) {
				next.ServeHTTP(w, r)
				return
			}
			start := time.Now()
			rec := record(w)
			// The user is set further in, on a derived context this filter
			// never sees; authentication reports it through NoteUser.
			note := &logNote{}
			next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), logNoteKey{}, note)))
			attrs := []any{
				"method", r.Method, "path", r.URL.Path, "status", rec.status(), "bytes", rec.written,
				"duration", time.Since(start), "userAgent", r.UserAgent(), "remote", r.RemoteAddr,
			}
			if info, ok := request.RequestInfoFrom(r.Context()); ok {
				attrs = append(attrs, "verb", info.Verb)
			}
			if note.user != nil {
				attrs = append(attrs, "user", note.user.Name)
			}
			logger.DebugContext(r.Context(), "request", attrs...)
		})
	}
}

type logNoteKey struct{}

// logNote carries facts learnt further in the chain back out to WithLogging.
// Written and read on the request's goroutine only.
type logNote struct {
	user *request.User
}

// NoteUser records the authenticated user for the access log written by
// WithLogging, if that filter is in the chain. Authentication filters call
// it; it is a no-op otherwise.
func NoteUser(ctx context.Context, u *request.User) {
	if note, ok := ctx.Value(logNoteKey{}).(*logNote); ok {
		note.user = u
	}
}

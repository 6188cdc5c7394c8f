package filters

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// WithRequestInfo parses the request's RequestInfo once and puts it on the
// context for every later filter and the handler. Paths request.Parse
// refuses (".." and friends) are answered 400 here, before any
// authentication or authorization could be fooled by them.
func WithRequestInfo(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := request.Parse(r)
		if err != nil {
			if errors.Is(err, request.ErrInvalidPath) {
				WriteStatus(w, &apierrors.NewBadRequest(err.Error()).ErrStatus)
				return
			}
			WriteStatusError(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithRequestInfo(r.Context(), info)))
	})
}

// requestInfo returns the request's RequestInfo, or writes a 500 and
// returns nil when the chain was assembled without WithRequestInfo — a
// programming error better reported loudly than by guessing.
func requestInfo(w http.ResponseWriter, r *http.Request) *request.RequestInfo {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok {
		WriteStatus(w, &apierrors.NewInternalError(errors.New("no RequestInfo found in the context")).ErrStatus)
		return nil
	}
	return info
}

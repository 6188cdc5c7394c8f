package apiserver

import (
	"net/http"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// headerWarnings is the request.WarningSink of one write: each distinct
// warning becomes a Warning response header, as upstream's
// k8s.io/apiserver/pkg/warning recorder does (it too drops duplicates, so a
// plugin evaluated on every compare-and-swap retry warns once). Admission
// runs before the response is written, so adding headers is safe.
type headerWarnings struct {
	w    http.ResponseWriter
	seen []string
}

func (h *headerWarnings) AddWarning(text string) {
	if text == "" {
		return
	}
	for _, s := range h.seen {
		if s == text {
			return
		}
	}
	h.seen = append(h.seen, text)
	addWarning(h.w, text)
}

// withWarnings gives a write request's context a sink that turns warnings
// into response headers. Reads never warn, so they skip the context and
// request copies.
func withWarnings(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) *http.Request {
	if info.IsReadOnly() {
		return r
	}
	return r.WithContext(request.WithWarnings(r.Context(), &headerWarnings{w: w}))
}

var _ request.WarningSink = (*headerWarnings)(nil)

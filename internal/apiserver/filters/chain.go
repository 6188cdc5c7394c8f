package filters

import "net/http"

// Filter wraps a handler with one concern.
type Filter = func(http.Handler) http.Handler

// Chain wraps h in filters so that filters[0] is the outermost: it sees the
// request first and the response last.
func Chain(h http.Handler, filters ...Filter) http.Handler {
	for i := len(filters) - 1; i >= 0; i-- {
		h = filters[i](h)
	}
	return h
}

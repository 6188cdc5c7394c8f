package filters

import (
	"math/rand/v2"
	"net/http"
)

// GoawayConfig configures WithProbabilisticGoaway.
type GoawayConfig struct {
	// Chance is the share of HTTP/2 requests answered with "Connection:
	// close" (upstream's --goaway-chance, 0 to 0.02).
	Chance float64
	// Rand returns a number in [0, 1); default math/rand/v2's Float64,
	// which is safe for concurrent use without a lock.
	Rand func() float64
}

// WithProbabilisticGoaway is upstream's --goaway-chance: behind a TCP load
// balancer, an HTTP/2 client keeps its one connection to whichever API
// server it reached first, so servers that restart (or join) stay idle
// while the others carry everything. With the given probability an HTTP/2
// request's response carries "Connection: close", on which Go's HTTP/2
// server sends GOAWAY: the request completes, streams in flight finish,
// and the client opens its next connection through the load balancer,
// possibly to another server. Long-running requests (watch, exec, logs)
// are never chosen: they would keep the old connection open anyway, and
// an idle server is balanced by the short requests. HTTP/1 connections
// are balanced per request already and are left alone. Needs
// WithRequestInfo earlier in the chain.
func WithProbabilisticGoaway(cfg GoawayConfig) Filter {
	if cfg.Chance <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 2 && cfg.Rand() < cfg.Chance {
				if info := requestInfo(w, r); info == nil {
					return
				} else if !info.IsLongRunning() {
					w.Header().Set("Connection", "close")
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

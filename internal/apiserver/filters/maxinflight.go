package filters

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// MaxInFlightConfig bounds how many requests are served at once. The zero
// value gives upstream's defaults.
type MaxInFlightConfig struct {
	// MaxRequestsInFlight bounds concurrent read-only requests
	// (--max-requests-inflight). 0 means the default, 400; negative means
	// unlimited.
	MaxRequestsInFlight int
	// MaxMutatingRequestsInFlight bounds concurrent mutating requests
	// (--max-mutating-requests-inflight). 0 means the default, 200;
	// negative means unlimited.
	MaxMutatingRequestsInFlight int
	// ExemptGroups are never limited. Upstream exempts system:masters; the
	// default here is none, because Myriad's own components currently run
	// with admin credentials and exempting them would switch flow control
	// off exactly under the restart storms it exists for.
	ExemptGroups []string
	// Registerer receives apiserver_current_inflight_requests; nil skips
	// registration.
	Registerer prometheus.Registerer
}

// Default in-flight limits, as upstream's flags.
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// WithMaxInFlight answers 429 Too Many Requests with Retry-After: 1 — at
// once, without queueing — when the read-only or mutating limit is reached.
// Rejecting immediately is the point: a queued request holds memory and a
// connection while its client's timeout runs out, and 429 tells client-go
// to back off and retry, spreading a relist storm out in time.
// Long-running requests (watch, exec, log, ...) are not counted: they
// would hold a slot for hours. Needs WithRequestInfo earlier in the chain,
// and authentication earlier if ExemptGroups is used.
func WithMaxInFlight(cfg MaxInFlightConfig) (Filter, error) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_current_inflight_requests",
		// Upstream reports the high-water mark of the last second; this is
		// the instantaneous value, which the same dashboards plot fine.
		Help: "Number of requests currently counted against the max-in-flight limits, per request kind.",
	}, []string{"request_kind"})
	gauge, err := register(cfg.Registerer, gauge)
	if err != nil {
		return nil, err
	}
	readOnly := newSemaphore(limitOrDefault(cfg.MaxRequestsInFlight, DefaultMaxRequestsInFlight), gauge.WithLabelValues("readOnly"))
	mutating := newSemaphore(limitOrDefault(cfg.MaxMutatingRequestsInFlight, DefaultMaxMutatingRequestsInFlight), gauge.WithLabelValues("mutating"))
	exempt := cfg.ExemptGroups

	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			info := requestInfo(w, r)
			if info == nil {
				return
			}
			if info.IsLongRunning() || isExempt(r, exempt) {
				next.ServeHTTP(w, r)
				return
			}
			sem := mutating
			if info.IsReadOnly() {
				sem = readOnly
			}
			if !sem.tryAcquire() {
				tooManyRequests(w)
				return
			}
			defer sem.release()
			next.ServeHTTP(w, r)
		})
	}, nil
}

func limitOrDefault(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

func isExempt(r *http.Request, groups []string) bool {
	if len(groups) == 0 {
		return false
	}
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return false
	}
	for _, g := range groups {
		if u.InGroup(g) {
			return true
		}
	}
	return false
}

func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	WriteStatus(w, &apierrors.NewTooManyRequests("Too many requests, please try again later.", 1).ErrStatus)
}

// semaphore is a non-blocking counting semaphore; nil slots means unlimited.
type semaphore struct {
	slots chan struct{}
	gauge prometheus.Gauge
}

func newSemaphore(limit int, gauge prometheus.Gauge) *semaphore {
	s := &semaphore{gauge: gauge}
	if limit > 0 {
		s.slots = make(chan struct{}, limit)
	}
	return s
}

func (s *semaphore) tryAcquire() bool {
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			return false
		}
	}
	s.gauge.Inc()
	return true
}

func (s *semaphore) release() {
	s.gauge.Dec()
	if s.slots != nil {
		<-s.slots
	}
}

// register registers c on reg, or returns the collector already registered
// under the same description, so that building the chain twice on one
// registry (tests, server restarts in-process) shares the metric instead of
// failing.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		var zero C
		return zero, fmt.Errorf("filters: register metric: %w", err)
	}
	return c, nil
}

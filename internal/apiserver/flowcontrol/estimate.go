package flowcontrol

import (
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apistorage "k8s.io/apiserver/pkg/storage"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Sizer says what a list would return, from the watch cache's books,
// before the list is done (apiserver.Server.ListSize). ok is false when
// the resource has no cache (computed resources).
type Sizer interface {
	ListSize(gvr schema.GroupVersionResource, namespace string, label labels.Selector, field fields.Selector) (objects, bytes int64, ok bool)
}

// EstimatorConfig tunes how LISTs are charged. The zero value gives the
// defaults each field states.
type EstimatorConfig struct {
	// ListBytesPerSeat is how many bytes of a LIST's result cost one
	// seat. Default: ListBudgetPerCore × cores spread over the server's
	// seats, so that LISTs whose results add up to that budget fill the
	// server — the machine's capacity to decode and encode, not a count
	// of requests, bounds the list work in flight.
	ListBytesPerSeat int64
	// ListBudgetPerCore is the bytes of LIST results in flight per core:
	// the list gate's budget (gate.go), and what fills the server's
	// seats. Default 4 MiB: a core encodes a few hundred MB/s, so this is
	// tens of milliseconds of work per core, and bounds the transient
	// memory of lists (several times their size while being encoded) to
	// tens of MB.
	ListBudgetPerCore int64
	// MaxListSeats caps one LIST's seats. Default: a quarter of the
	// server's seats. A LIST is further capped at its priority level's
	// largest request (upstream's max seats: 15% of the level's nominal
	// seats at most): a request wider than the level's current limit
	// would run only alone and hold every small request of the level
	// behind it for its whole duration.
	MaxListSeats uint64
	// ListAftermathPerCore is the rate, in bytes per second per core, at
	// which the server is taken to recover from a LIST's transient
	// memory after answering it: a LIST holds its seats for another
	// bytes / (rate × cores) (upstream's final seats and additional
	// latency). The garbage of a 12 MB answer — the buffers it was
	// encoded in, the copies the client's slow reading kept alive — is
	// paid for in garbage collection after the request ends; without
	// this, a client that lists back to back is charged only for the
	// part of the work its own request saw. Default 32 MiB/s.
	ListAftermathPerCore int64
	// Cores defaults to GOMAXPROCS.
	Cores int
}

func (c EstimatorConfig) withDefaults(serverSeats int) EstimatorConfig {
	if c.Cores <= 0 {
		c.Cores = runtime.GOMAXPROCS(0)
	}
	if c.ListBudgetPerCore <= 0 {
		c.ListBudgetPerCore = 4 << 20
	}
	if c.ListBytesPerSeat <= 0 {
		c.ListBytesPerSeat = max(1, c.ListBudgetPerCore*int64(c.Cores)/int64(max(1, serverSeats)))
	}
	if c.ListAftermathPerCore <= 0 {
		c.ListAftermathPerCore = 32 << 20
	}
	if c.MaxListSeats == 0 {
		c.MaxListSeats = uint64(max(1, serverSeats/4))
	}
	return c
}

// estimator charges LISTs by bytes (Sizer) and everything else as
// upstream does (a mutating request by the watchers its change reaches).
type estimator struct {
	cfg      EstimatorConfig
	sizer    Sizer
	upstream fcrequest.WorkEstimatorFunc
	// maxSeats is a priority level's largest request (0: unknown).
	maxSeats func(priorityLevel string) uint64
}

func (e *estimator) estimate(r *http.Request, flowSchema, priorityLevel string) fcrequest.WorkEstimate {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok || info.Verb != request.VerbList || e.sizer == nil {
		return e.upstream(r, flowSchema, priorityLevel)
	}
	bytes, ok := r.Context().Value(listBytesKey{}).(int64)
	if !ok {
		if bytes, ok = e.listBytes(r, info); !ok {
			return e.upstream(r, flowSchema, priorityLevel)
		}
	}
	seats := e.seatsFor(bytes)
	if e.maxSeats != nil {
		if m := e.maxSeats(priorityLevel); m > 0 {
			seats = min(seats, m)
		}
	}
	we := fcrequest.WorkEstimate{InitialSeats: seats}
	if after := time.Duration(float64(bytes) / float64(e.cfg.ListAftermathPerCore*int64(e.cfg.Cores)) * float64(time.Second)); after >= time.Millisecond {
		we.FinalSeats, we.AdditionalLatency = seats, after
	}
	return we
}

// listSeats is what a list costs: 1 + its bytes / ListBytesPerSeat, at
// most MaxListSeats. ok is false when the cache cannot say.
func (e *estimator) listSeats(r *http.Request, info *request.RequestInfo) (uint64, bool) {
	bytes, ok := e.listBytes(r, info)
	if !ok {
		return 0, false
	}
	return e.seatsFor(bytes), true
}

func (e *estimator) seatsFor(bytes int64) uint64 {
	return min(1+uint64(bytes/e.cfg.ListBytesPerSeat), e.cfg.MaxListSeats)
}

// listBytes is the stored bytes the list returns, as the cache's books
// say (a page's share of them with limit).
func (e *estimator) listBytes(r *http.Request, info *request.RequestInfo) (int64, bool) {
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	var label labels.Selector
	var field fields.Selector
	var limit int64
	// Parse only what is there: most lists carry no query at all.
	if q := r.URL.RawQuery; q != "" {
		vals := r.URL.Query()
		if s := vals.Get("labelSelector"); s != "" {
			if l, err := labels.Parse(s); err == nil {
				label = l
			}
		}
		if info.FieldSelector != "" {
			if f, err := fields.ParseSelector(info.FieldSelector); err == nil {
				field = f
			}
		}
		if strings.Contains(q, "limit=") {
			limit, _ = strconv.ParseInt(vals.Get("limit"), 10, 64)
		}
	}
	objects, bytes, ok := e.sizer.ListSize(gvr, info.Namespace, label, field)
	if !ok {
		return 0, false
	}
	if limit > 0 && limit < objects {
		bytes = bytes / objects * limit
	}
	return bytes, true
}

// listBytesKey carries a list's size, found before classification, to
// the estimator.
type listBytesKey struct{}

// noObjectCounts is the object counter upstream's estimator gets: lists
// this server caches never reach it, and the rest (computed lists) cost
// upstream's minimum.
func noObjectCounts(string) (apistorage.Stats, error) {
	return apistorage.Stats{}, fcrequest.ObjectCountNotFoundErr
}

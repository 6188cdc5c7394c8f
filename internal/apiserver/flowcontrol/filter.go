package flowcontrol

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	apifilters "k8s.io/apiserver/pkg/server/filters"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"

	"github.com/myriad-k8s/myriad/internal/admission/upstream"
	"github.com/myriad-k8s/myriad/internal/apiserver/filters"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Filter is flow control in the chain, where max-in-flight otherwise
// sits: after authentication and impersonation (flows are users), before
// authorization. It needs filters.WithRequestInfo and authentication
// earlier in the chain.
func (c *Controller) Filter(next http.Handler) http.Handler {
	apf := apifilters.WithPriorityAndFairness(c.admitted(next), longRunning, c.fc, c.estimate.estimate, c.cfg.RequestWaitLimit)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		info, ok := request.RequestInfoFrom(ctx)
		if !ok {
			filters.WriteStatus(w, &apierrors.NewInternalError(errNoRequestInfo).ErrStatus)
			return
		}
		u, _ := request.UserFrom(ctx)
		if u.InGroup(request.GroupMasters) {
			// Upstream's exempt FlowSchema matches system:masters first of
			// all; deciding it here skips the bridge and the classifier.
			next.ServeHTTP(w, r)
			return
		}
		if rule := c.ua.match(r.UserAgent()); rule != nil {
			// A limit counts short requests; a watch would hold its slot
			// for hours. A reject rule refuses everything.
			if rule.rejects() || !info.IsLongRunning() {
				if !rule.acquire() {
					c.m.userAgent.WithLabelValues(rule.name).Inc()
					c.tooManyRequests(w, "requests from this client are limited by the operator")
					return
				}
				defer rule.release()
			}
		}
		if info.Verb == request.VerbList {
			if c.expensiveNow(w, r, info) {
				return
			}
			bytes, known := c.estimate.listBytes(r, info)
			if known {
				// Sized once: the estimator reads it from the context.
				ctx = context.WithValue(ctx, listBytesKey{}, bytes)
				release, ok := c.enterListGate(w, r, u, bytes)
				if !ok {
					return
				}
				defer release()
			}
		}
		ctx = apirequest.WithRequestInfo(ctx, upstreamRequestInfo(info))
		// Authentication always names a user (system:anonymous on public
		// paths); without one upstream's filter would answer 500.
		ui := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
		if u != nil {
			ui = &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
		}
		ctx = apirequest.WithUser(ctx, ui)
		rw := &rejectWriter{ResponseWriter: w}
		apf.ServeHTTP(rw, r.WithContext(ctx))
	})
}

var errNoRequestInfo = errorString("no RequestInfo in the request context; flow control needs WithRequestInfo earlier in the chain")

type errorString string

func (e errorString) Error() string { return string(e) }

// expensiveNow writes the active rejection of a LIST that is expensive
// while the server warms up or its heap is past the threshold, and
// reports whether it did.
func (c *Controller) expensiveNow(w http.ResponseWriter, r *http.Request, info *request.RequestInfo) bool {
	warming := !c.warm.check(c.cfg.API.Ready)
	overHeap := c.cfg.Reject.MemoryThresholdBytes > 0 && c.heap.bytes.Load() > c.cfg.Reject.MemoryThresholdBytes
	if !warming && !overHeap {
		return false
	}
	seats, ok := c.estimate.listSeats(r, info)
	if !ok || seats < c.cfg.Reject.ExpensiveListSeats {
		return false
	}
	reason, msg := "memory", "the server is short of memory; expensive lists are refused for now"
	if warming {
		reason, msg = "warming", "the server is still filling its caches; expensive lists are refused for now"
	}
	c.m.active.WithLabelValues(reason).Inc()
	c.tooManyRequests(w, msg)
	return true
}

func (c *Controller) tooManyRequests(w http.ResponseWriter, msg string) {
	secs := jitter(c.cfg.Reject.RetryAfterSeconds)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	filters.WriteStatus(w, &apierrors.NewTooManyRequests(msg, secs).ErrStatus)
}

// enterListGate waits, for a big LIST, for its share of the list
// budget (gate.go) — before APF, so that lists waiting their turn hold
// no seats of their level — at most RequestWaitLimit, then answers 429.
// Each user waits in its own queue. ok is false when it answered.
func (c *Controller) enterListGate(w http.ResponseWriter, r *http.Request, u *request.User, bytes int64) (release func(), ok bool) {
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.RequestWaitLimit)
	defer cancel()
	flow := user.Anonymous
	if u != nil {
		flow = u.Name
	}
	release, ok = c.gate.acquire(ctx, flow, bytes)
	if !ok {
		if r.Context().Err() == nil {
			c.m.active.WithLabelValues("list-budget").Inc()
			c.tooManyRequests(w, "too many large lists are being answered; try again later")
		}
		return nil, false
	}
	return release, true
}

// longRunning is upstream's check: such requests (except watches, which
// APF holds until initialized) bypass the dispatcher.
func longRunning(r *http.Request, _ *apirequest.RequestInfo) bool {
	info, ok := request.RequestInfoFrom(r.Context())
	return ok && info.IsLongRunning()
}

// upstreamRequestInfo is info as k8s.io/apiserver's RequestInfo, which
// upstream's classifier and estimator read.
func upstreamRequestInfo(info *request.RequestInfo) *apirequest.RequestInfo {
	return &apirequest.RequestInfo{
		IsResourceRequest: info.IsResourceRequest,
		Path:              info.Path,
		Verb:              info.Verb,
		APIPrefix:         info.APIPrefix,
		APIGroup:          info.APIGroup,
		APIVersion:        info.APIVersion,
		Namespace:         info.Namespace,
		Resource:          info.Resource,
		Subresource:       info.Subresource,
		Name:              info.Name,
		Parts:             info.Parts,
		FieldSelector:     info.FieldSelector,
	}
}

// rejectWriter is the writer upstream's filter gets. Upstream answers a
// rejection in plain text; this server answers every error as a
// metav1.Status, so a 429 written before the request was admitted is
// rewritten as one (with upstream's Retry-After).
type rejectWriter struct {
	http.ResponseWriter
	admitted bool
	swallow  bool
}

func (w *rejectWriter) WriteHeader(code int) {
	if !w.admitted && code == http.StatusTooManyRequests {
		secs, _ := strconv.Atoi(w.Header().Get("Retry-After"))
		secs = jitter(max(secs, 1))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.swallow = true
		filters.WriteStatus(w.ResponseWriter, &apierrors.NewTooManyRequests("Too many requests, please try again later.", secs).ErrStatus)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *rejectWriter) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// admitted marks the request as let through and hands next the
// original writer (with its Flusher and Hijacker). A watch is
// initialized, for APF, when its handler first writes: until then it
// holds its seat, after that it is a long-running request.
func (c *Controller) admitted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rw, ok := w.(*rejectWriter)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		rw.admitted = true
		info, ok := request.RequestInfoFrom(r.Context())
		if ok && info.Verb == request.VerbWatch {
			next.ServeHTTP(&watchInitWriter{ResponseWriter: rw.ResponseWriter, r: r}, r)
			return
		}
		g := c.m.mutating
		if ok && info.IsReadOnly() {
			g = c.m.readOnly
		}
		g.Inc()
		defer g.Dec()
		next.ServeHTTP(rw.ResponseWriter, r)
	})
}

// watchInitWriter signals the watch's initialization on its first
// header write or flush.
type watchInitWriter struct {
	http.ResponseWriter
	r    *http.Request
	done bool
}

func (w *watchInitWriter) signal() {
	if !w.done {
		w.done = true
		utilflowcontrol.WatchInitialized(w.r.Context())
	}
}

func (w *watchInitWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	w.signal()
}

func (w *watchInitWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.signal()
	return n, err
}

func (w *watchInitWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.signal()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *watchInitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Unwrap lets http.ResponseController reach the connection.
func (w *rejectWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rejectMetrics count what this package rejects before upstream's
// dispatcher sees the request (upstream's apiserver_flowcontrol_* count
// the rest).
type rejectMetrics struct {
	userAgent *prometheus.CounterVec
	active    *prometheus.CounterVec
	// inflight is apiserver_current_inflight_requests, which dashboards
	// (and the bench) read whichever limiter is on: here the requests
	// APF admitted and that are executing, watches excluded.
	inflight           *prometheus.GaugeVec
	readOnly, mutating prometheus.Gauge
}

func newRejectMetrics(reg prometheus.Registerer) (*rejectMetrics, error) {
	m := &rejectMetrics{
		userAgent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_flowcontrol_user_agent_rejected_requests_total",
			Help: "Requests answered 429 by a User-Agent rule (ConfigMap kube-system/" + UserAgentRulesName + "), by rule.",
		}, []string{"rule"}),
		active: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "myriad_flowcontrol_active_rejected_requests_total",
			Help: "Expensive requests answered 429 before queueing, by reason (warming: caches still filling; memory: heap past the threshold; list-budget: a large list waited its turn too long).",
		}, []string{"reason"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Number of requests admitted by priority and fairness and executing, per request kind (watches excluded).",
		}, []string{"request_kind"}),
	}
	m.readOnly, m.mutating = m.inflight.WithLabelValues("readOnly"), m.inflight.WithLabelValues("mutating")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.userAgent, m.active, m.inflight, upstream.PrefixCollector("apiserver_flowcontrol_")} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// jitter spreads a Retry-After of secs over [secs, 2·secs]. Clients
// (client-go, the simulator's kubelets) wait exactly what the server
// says: without it, every client rejected in the same second comes back
// in the same second, and a relist storm repeats itself in lockstep.
func jitter(secs int) int { return secs + rand.IntN(secs+1) }

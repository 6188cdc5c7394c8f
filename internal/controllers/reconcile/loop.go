package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// DefaultMaxRetries is how often a failing key is retried with backoff
// before it is dropped until its next event (upstream uses 15 for most
// controllers).
const DefaultMaxRetries = 15

// Queue is the rate-limited queue of keys a Loop drains.
type Queue[K comparable] = workqueue.TypedRateLimitingInterface[K]

// Options are a Loop's per-controller differences; the zero value is
// right for most.
type Options[K comparable] struct {
	// RateLimiter spaces a key's retries. Default: client-go's controller
	// limiter (per key 5 ms doubling to 1000 s, plus 10 qps overall).
	RateLimiter workqueue.TypedRateLimiter[K]
	// MaxRetries is how often a failing key is retried before it is
	// dropped until its next event: 0 means DefaultMaxRetries, a negative
	// value retries until it succeeds (the namespace controller and the
	// garbage collector, whose keys get no further event to revive them).
	MaxRetries int
}

// Loop is a controller's queue and the workers draining it: each worker
// takes a key, calls Sync, and on error requeues the key with backoff,
// up to MaxRetries. The queue's methods (Add, AddAfter, Len, ...) are
// promoted, so handlers enqueue on the Loop itself.
//
// A Sync may return ErrRequeue (or wrap it) when it is not finished but has
// not failed either (content still being deleted): the key is retried with
// backoff, without a cap and without a log line. RequeueAfter(d) retries
// it after d instead.
type Loop[K comparable] struct {
	Queue[K]

	name       string
	sync       func(ctx context.Context, key K) error
	log        *slog.Logger
	clock      clock.PassiveClock
	maxRetries int
	syncs      *prometheus.CounterVec
	duration   prometheus.Observer
}

// NewLoop builds the Loop named name (its queue's name in workqueue_*
// metrics and its controller label in the sync metrics) on c's clock,
// logger and metrics registry.
func NewLoop[K comparable](c *controllerctx.Context, name string, sync func(ctx context.Context, key K) error, opts Options[K]) *Loop[K] {
	limiter := opts.RateLimiter
	if limiter == nil {
		limiter = workqueue.DefaultTypedControllerRateLimiter[K]()
	}
	maxRetries := opts.MaxRetries
	if maxRetries == 0 {
		maxRetries = DefaultMaxRetries
	}
	logger, clk := c.Logger, c.Clock
	if logger == nil {
		logger = slog.Default()
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	cfg := workqueue.TypedRateLimitingQueueConfig[K]{Name: name, Clock: clk, MetricsProvider: queueMetrics(c.Metrics)}
	l := &Loop[K]{
		Queue:      workqueue.NewTypedRateLimitingQueueWithConfig(limiter, cfg),
		name:       name,
		sync:       sync,
		log:        logger.With("controller", name),
		clock:      clk,
		maxRetries: maxRetries,
	}
	l.syncs, l.duration = syncMetrics(c.Metrics, name)
	return l
}

// Name is the Loop's name.
func (l *Loop[K]) Name() string { return l.name }

// Run waits for synced, runs workers until ctx is done, then shuts the
// queue down and waits for the workers to return. The queue is shut down
// also when the caches never sync; a Loop runs once.
func (l *Loop[K]) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer l.ShutDown()
	l.log.Info("starting controller", "workers", workers)
	defer l.log.Info("stopped controller")
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait.UntilWithContext(ctx, func(ctx context.Context) {
				for l.processNext(ctx) {
				}
			}, time.Second)
		}()
	}
	<-ctx.Done()
	l.ShutDown()
	wg.Wait()
}

// ErrRequeue, returned or wrapped by a Sync, asks for a retry with backoff
// that is neither a failure nor capped.
var ErrRequeue = errors.New("reconcile: not finished, requeue")

// RequeueAfter returns an error asking for a retry of the key after d,
// like ErrRequeue but at a time of the Sync's choosing.
func RequeueAfter(d time.Duration) error { return requeueAfter{after: d} }

type requeueAfter struct{ after time.Duration }

func (r requeueAfter) Error() string        { return fmt.Sprintf("reconcile: requeue after %v", r.after) }
func (r requeueAfter) Is(target error) bool { return target == ErrRequeue }

// processNext syncs one key; it reports false once the queue is shut down.
func (l *Loop[K]) processNext(ctx context.Context) bool {
	key, quit := l.Get()
	if quit {
		return false
	}
	defer l.Done(key)
	start := l.clock.Now()
	err := l.sync(ctx, key)
	l.duration.Observe(l.clock.Since(start).Seconds())
	var after requeueAfter
	switch {
	case err == nil:
		l.syncs.WithLabelValues("success").Inc()
		l.Forget(key)
	case errors.As(err, &after):
		l.syncs.WithLabelValues("requeue").Inc()
		l.Forget(key)
		l.AddAfter(key, after.after)
	case errors.Is(err, ErrRequeue):
		l.syncs.WithLabelValues("requeue").Inc()
		l.AddRateLimited(key)
	case ctx.Err() != nil:
		// Shutting down: the next leader resyncs it.
	case l.maxRetries < 0 || l.NumRequeues(key) < l.maxRetries:
		l.syncs.WithLabelValues("error").Inc()
		level := slog.LevelInfo
		if apierrors.IsConflict(err) {
			// A write raced a newer version; the retry reads it. Routine.
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "sync failed, retrying", "key", key, "err", err)
		l.AddRateLimited(key)
	default:
		l.syncs.WithLabelValues("error").Inc()
		l.log.Warn("sync failed, dropping key", "key", key, "err", err)
		l.Forget(key)
	}
	return true
}

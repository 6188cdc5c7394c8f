package podcontrol

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// maxRetries is how often a failing key is retried with backoff before it
// is dropped until its next event (upstream uses 15 for most controllers).
const maxRetries = 15

// Queue is the rate-limited queue of object keys every controller uses.
type Queue = workqueue.TypedRateLimitingInterface[string]

// NewQueue returns a queue with client-go's default controller rate limiter
// (per-item exponential backoff plus an overall token bucket).
func NewQueue(name string) Queue {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Loop runs a controller's workers: each takes a key from Queue and calls
// Sync, requeueing with backoff on error.
type Loop struct {
	Name   string
	Queue  Queue
	Sync   func(ctx context.Context, key string) error
	Logger *slog.Logger

	syncs    *prometheus.CounterVec
	duration prometheus.Observer
}

// NewLoop builds a Loop and registers its metrics on reg (which may be nil):
// myriad_controller_syncs_total{controller,result} and
// myriad_controller_sync_duration_seconds{controller}.
func NewLoop(name string, queue Queue, sync func(ctx context.Context, key string) error, logger *slog.Logger, reg prometheus.Registerer) *Loop {
	if logger == nil {
		logger = slog.Default()
	}
	l := &Loop{Name: name, Queue: queue, Sync: sync, Logger: logger.With("controller", name)}
	syncs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "myriad_controller_syncs_total",
		Help:        "Syncs of controller keys, by result.",
		ConstLabels: prometheus.Labels{"controller": name},
	}, []string{"result"})
	duration := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "myriad_controller_sync_duration_seconds",
		Help:        "Time to sync one controller key.",
		ConstLabels: prometheus.Labels{"controller": name},
		Buckets:     prometheus.ExponentialBuckets(0.0005, 4, 10),
	})
	l.syncs, l.duration = syncs, duration
	if reg != nil {
		l.syncs = registerOrExisting(reg, syncs)
		l.duration = registerOrExisting(reg, duration)
	}
	return l
}

func registerOrExisting[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Run waits for synced, runs workers until ctx is done, then shuts the
// queue down and waits for the workers to return.
func (l *Loop) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer l.Queue.ShutDown()
	l.Logger.Info("starting controller", "workers", workers)
	defer l.Logger.Info("stopped controller")
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
	l.Queue.ShutDown()
	wg.Wait()
}

func (l *Loop) processNext(ctx context.Context) bool {
	key, quit := l.Queue.Get()
	if quit {
		return false
	}
	defer l.Queue.Done(key)
	start := time.Now()
	err := l.Sync(ctx, key)
	l.duration.Observe(time.Since(start).Seconds())
	switch {
	case err == nil:
		l.syncs.WithLabelValues("success").Inc()
		l.Queue.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the next leader resyncs it.
	case l.Queue.NumRequeues(key) < maxRetries:
		l.syncs.WithLabelValues("error").Inc()
		level := slog.LevelInfo
		if apierrors.IsConflict(err) {
			// A write raced a newer version; the retry reads it. Routine.
			level = slog.LevelDebug
		}
		l.Logger.Log(ctx, level, "sync failed, retrying", "key", key, "err", err)
		l.Queue.AddRateLimited(key)
	default:
		l.syncs.WithLabelValues("error").Inc()
		l.Logger.Warn("sync failed, dropping key", "key", key, "err", err)
		l.Queue.Forget(key)
	}
	return true
}

// Key returns obj's namespace/name key, unwrapping tombstones.
func Key(obj any) (string, bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k, err == nil
}

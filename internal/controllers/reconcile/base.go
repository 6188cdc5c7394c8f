package reconcile

import (
	"context"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// Base is what a controller keyed by namespace/name strings holds besides
// its listers: embedded, it gives the controller its Run and Enqueue, so
// a controller is its Sync and its watches.
type Base struct {
	Client kubernetes.Interface
	// Queue is the controller's Loop; handlers add keys to it.
	Queue *Loop[string]
	// Synced are the informers Run waits for; New sets them.
	Synced []cache.InformerSynced
	Clock  clock.PassiveClock
	// Log carries controller=<name>.
	Log *slog.Logger
}

// NewBase builds the Base of the controller name syncing keys with sync.
func NewBase(c *controllerctx.Context, name string, sync func(ctx context.Context, key string) error, opts Options[string]) Base {
	l := NewLoop(c, name, sync, opts)
	return Base{Client: c.Client, Queue: l, Clock: l.clock, Log: l.log}
}

// Run implements controllerctx.Controller: it waits for Synced and works
// until ctx is done.
func (b *Base) Run(ctx context.Context, workers int) {
	b.Queue.Run(ctx, workers, b.Synced...)
}

// ShutDown shuts the queue down, for a controller built but never Run
// (tests): the queue's goroutines start in NewBase.
func (b *Base) ShutDown() { b.Queue.ShutDown() }

// Enqueue adds obj's namespace/name key (tombstones unwrapped).
func (b *Base) Enqueue(obj any) {
	if key, ok := Key(obj); ok {
		b.Queue.Add(key)
	}
}

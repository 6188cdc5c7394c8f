package cache

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// Cache mirrors one resource type's keys and serves reads and watches from
// memory. Create it with New, then Start it; all methods are safe for
// concurrent use.
type Cache struct {
	cfg        Config
	metrics    *metrics
	compressor compressor // with Config.CompressValues

	// mu guards the mirrored state. Writers: the reflector goroutine only.
	mu struct {
		sync.RWMutex
		st  *state
		win *window
		// rev is the revision the cache is complete up to: every change
		// with a revision <= rev has been applied.
		rev int64
		// revChanged is closed (and replaced) whenever rev advances, to
		// wake readers waiting for a revision.
		revChanged chan struct{}
	}
	// cloneMu serializes btree Clone calls, which update the source tree's
	// copy-on-write context and so may not run concurrently, even under a
	// read lock of mu.
	cloneMu sync.Mutex

	reg registry

	// progressReq coalesces requests for a store progress notification
	// (from consistent reads) into one pending request for the reflector.
	progressReq chan struct{}

	ready     chan struct{}
	readyOnce sync.Once

	// life guards starting and stopping; wg counts the reflector and
	// every watcher goroutine, all of which Stop joins.
	life struct {
		sync.Mutex
		started, stopped bool
		cancel           context.CancelFunc
	}
	stopped chan struct{}
	wg      sync.WaitGroup
}

// New validates cfg, fills its defaults and returns a Cache that does
// nothing until Start.
func New(cfg Config) (*Cache, error) {
	if err := cfg.validateAndDefault(); err != nil {
		return nil, err
	}
	c := &Cache{
		cfg:         cfg,
		progressReq: make(chan struct{}, 1),
		ready:       make(chan struct{}),
		stopped:     make(chan struct{}),
	}
	c.mu.st = newState(cfg.Prefix, cfg.IndexedFields, cfg.IndexedLabels)
	c.mu.win = newWindow(cfg.MinEvents, cfg.MaxEvents, cfg.ReconnectInterval, 0)
	c.mu.revChanged = make(chan struct{})
	c.reg.init()
	m, err := newMetrics(cfg)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	c.reg.watchers = m.watchers
	return c, nil
}

// Start begins mirroring the store: a list of Prefix, then a watch from the
// list's revision, re-established (or re-listed) whenever it fails. It
// returns at once; Ready reports when the first list has been loaded.
// Calling Start again does nothing; after Stop it returns ErrStopped. ctx
// ends the cache like Stop does, but only Stop waits for its goroutines.
func (c *Cache) Start(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.stopped {
		return ErrStopped
	}
	if c.life.started {
		return nil
	}
	c.life.started = true
	ctx, c.life.cancel = context.WithCancel(ctx)
	c.wg.Add(1)
	go c.run(ctx)
	return nil
}

// Stop ends the reflector and every watcher (their channels are closed) and
// waits for all the cache's goroutines. It is idempotent. Reads after Stop
// return ErrStopped.
func (c *Cache) Stop() {
	c.life.Lock()
	if c.life.stopped {
		c.life.Unlock()
		c.wg.Wait()
		return
	}
	c.life.stopped = true
	close(c.stopped)
	if c.life.cancel != nil {
		c.life.cancel()
	}
	c.life.Unlock()
	c.reg.endAll(nil)
	c.wg.Wait()
	c.metrics.unregister()
}

// goOwned runs f on a goroutine joined by Stop; false if already stopped.
func (c *Cache) goOwned(f func()) bool {
	c.life.Lock()
	defer c.life.Unlock()
	if c.life.stopped {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// Ready reports whether the first list has been loaded, after which the
// cache serves reads.
func (c *Cache) Ready() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// WaitReady blocks until Ready, ctx ends (its error), or Stop (ErrStopped).
func (c *Cache) WaitReady(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopped:
		return ErrStopped
	}
}

// waitReadyBounded is WaitReady for requests: it gives up after
// ReadWaitTimeout with a 429 the client retries.
func (c *Cache) waitReadyBounded(ctx context.Context) error {
	if c.Ready() {
		return nil
	}
	t := c.cfg.Clock.NewTimer(c.cfg.ReadWaitTimeout)
	defer t.Stop()
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stopped:
		return ErrStopped
	case <-t.C():
		return errNotReady()
	}
}

// Revision returns the revision the cache is complete up to.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.mu.rev
}

// Len returns how many objects the cache holds (0 before it is filled).
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mu.st == nil {
		return 0
	}
	return c.mu.st.all.Len()
}

// Key returns the storage key of an object (name alone for cluster-scoped).
func (c *Cache) Key(namespace, name string) string {
	if namespace == "" {
		return c.cfg.Prefix + name
	}
	return c.cfg.Prefix + namespace + "/" + name
}

func (c *Cache) setRevLocked(rev int64) {
	if rev > c.mu.rev {
		c.mu.rev = rev
		close(c.mu.revChanged)
		c.mu.revChanged = make(chan struct{})
	}
}

func (c *Cache) requestProgress() {
	select {
	case c.progressReq <- struct{}{}:
	default: // one is already pending; it will satisfy this caller too
	}
}

// progressRetry is how often a waiting consistent read asks again for
// progress, in case a request was lost when the store watch was re-made.
const progressRetry = 100 * time.Millisecond

// waitForRev blocks until the cache is complete up to rev, asking the
// store for progress notifications when askProgress is set (the cache may
// be quiet while the store moves on with other prefixes). It answers 504
// "Too large resource version" after ReadWaitTimeout.
func (c *Cache) waitForRev(ctx context.Context, rev int64, askProgress bool) error {
	var timeout <-chan time.Time
	for {
		c.mu.RLock()
		cur, changed := c.mu.rev, c.mu.revChanged
		c.mu.RUnlock()
		if cur >= rev {
			return nil
		}
		if timeout == nil {
			t := c.cfg.Clock.NewTimer(c.cfg.ReadWaitTimeout)
			defer t.Stop()
			timeout = t.C()
		}
		var retry <-chan time.Time
		if askProgress {
			c.requestProgress()
			retry = c.cfg.Clock.After(progressRetry)
		}
		select {
		case <-changed:
		case <-retry:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stopped:
			return ErrStopped
		case <-timeout:
			return errTooLarge(rev, cur)
		}
	}
}

// waitForClientRev is waitForRev for a revision a client sent. A
// revision beyond the store's current one was never issued by this store:
// it comes from another store the resource lived in before (moved to
// another etcd by --etcd-servers-overrides, or a store restored from an
// older backup), whose revisions are unrelated to this one's. The cache
// would wait for it in vain, and a watch from the store itself would
// wait silently forever (the trap large clusters met when they split
// etcd): the client gets 410 Gone at once and relists, as it does after
// a compaction. A revision the store has reached but the cache has not
// yet is waited for as usual.
func (c *Cache) waitForClientRev(ctx context.Context, rev int64) error {
	c.mu.RLock()
	cur := c.mu.rev
	c.mu.RUnlock()
	if cur >= rev {
		return nil
	}
	// The store's current revision is linearizable: every revision any
	// client was ever given by this store is at or below it.
	storeRev, err := c.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return internalError(err)
	}
	if rev > storeRev {
		c.metrics.futureRevisions.Inc()
		return errFutureRevision(rev, storeRev)
	}
	return c.waitForRev(ctx, rev, true)
}

// waitConsistent implements the rv@t0 protocol: learn the store's current
// revision, then wait until the cache has caught up with it. It returns
// that revision.
func (c *Cache) waitConsistent(ctx context.Context) (int64, error) {
	rv0, err := c.cfg.Store.CurrentRevision(ctx)
	if err != nil {
		return 0, internalError(err)
	}
	return rv0, c.waitForRev(ctx, rv0, true)
}

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

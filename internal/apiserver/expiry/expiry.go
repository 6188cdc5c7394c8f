package expiry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Config configures an Expirer.
type Config struct {
	Store storage.Store
	// Prefix is the key prefix whose keys expire ("/core/events/").
	Prefix string
	// TTL is how long after its last write a key is deleted.
	TTL time.Duration
	// LastWrite reads, from a stored value found when the Expirer
	// (re)starts, when it was last written; false when it cannot tell, and
	// the key then gets a full TTL from the start.
	LastWrite func(kv storage.KeyValue) (time.Time, bool)
	// Period is how often due keys are deleted (default one second).
	Period  time.Duration
	Clock   clock.WithTicker
	Logger  *slog.Logger
	Metrics prometheus.Registerer
}

// entry is one key due at a time, valid while the key's revision is rev.
type entry struct {
	key string
	rev int64
	due time.Time
}

// Expirer runs the expiry of one prefix; Run does the work.
type Expirer struct {
	cfg     Config
	queue   []entry // sorted by due
	head    int     // queue[:head] is done
	pending prometheus.Gauge
	expired prometheus.Counter
}

// New checks cfg and registers the Expirer's metrics.
func New(cfg Config) (*Expirer, error) {
	if cfg.Store == nil || cfg.Prefix == "" || cfg.TTL <= 0 || cfg.Clock == nil {
		return nil, errors.New("expiry: Store, Prefix, a positive TTL and Clock are required")
	}
	if cfg.Period <= 0 {
		cfg.Period = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Expirer{
		cfg: cfg,
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "myriad_expiry_pending_keys", Help: "Keys queued to expire.", ConstLabels: prometheus.Labels{"prefix": cfg.Prefix},
		}),
		expired: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "myriad_expiry_expired_keys_total", Help: "Keys deleted because their TTL passed.", ConstLabels: prometheus.Labels{"prefix": cfg.Prefix},
		}),
	}
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{e.pending, e.expired} {
			if err := cfg.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("expiry: registering metrics: %w", err)
			}
		}
	}
	return e, nil
}

// Run expires keys until ctx ends. It lists the prefix once, then follows
// its watch; a lost watch lists again.
func (e *Expirer) Run(ctx context.Context) {
	tick := e.cfg.Clock.NewTicker(e.cfg.Period)
	defer tick.Stop()
	for ctx.Err() == nil {
		w, err := e.fill(ctx)
		if err != nil {
			e.cfg.Logger.Warn("expiry: listing failed; retrying", "prefix", e.cfg.Prefix, "err", err)
			if !e.wait(ctx, tick) {
				return
			}
			continue
		}
		e.follow(ctx, w, tick)
		w.Stop()
	}
}

func (e *Expirer) wait(ctx context.Context, tick clock.Ticker) bool {
	select {
	case <-ctx.Done():
		return false
	case <-tick.C():
		return true
	}
}

// fill rebuilds the queue from a list of the prefix and starts the watch
// after it.
func (e *Expirer) fill(ctx context.Context) (storage.Watcher, error) {
	kvs, rev, err := e.cfg.Store.List(ctx, e.cfg.Prefix)
	if err != nil {
		return nil, err
	}
	var w storage.Watcher
	if rev == 0 {
		// Nothing was ever written, and a watch from revision 0 starts
		// "now": a write between the list and the watch would be lost.
		// Watch first, then list again; a key both report is queued
		// twice, which costs only a failed delete.
		if w, err = e.cfg.Store.Watch(ctx, e.cfg.Prefix, 0); err != nil {
			return nil, err
		}
		if kvs, _, err = e.cfg.Store.List(ctx, e.cfg.Prefix); err != nil {
			w.Stop()
			return nil, err
		}
	}
	now := e.cfg.Clock.Now()
	q := make([]entry, 0, len(kvs))
	for _, kv := range kvs {
		due := now.Add(e.cfg.TTL)
		if e.cfg.LastWrite != nil {
			if t, ok := e.cfg.LastWrite(kv); ok && t.Before(now) {
				due = t.Add(e.cfg.TTL)
			}
		}
		q = append(q, entry{key: kv.Key, rev: kv.ModRevision, due: due})
	}
	// Every listed key is due within a TTL of now, and every key the
	// watch adds a full TTL from when it is seen: sorted once here, the
	// queue stays sorted by appending.
	sort.SliceStable(q, func(i, j int) bool { return q[i].due.Before(q[j].due) })
	e.queue, e.head = q, 0
	e.pending.Set(float64(len(q)))
	if w != nil {
		return w, nil
	}
	return e.cfg.Store.Watch(ctx, e.cfg.Prefix, rev)
}

// follow queues what the watch reports and expires what is due, until the
// watch ends or ctx does.
func (e *Expirer) follow(ctx context.Context, w storage.Watcher, tick clock.Ticker) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					e.cfg.Logger.Warn("expiry: watch ended; listing again", "prefix", e.cfg.Prefix, "err", err)
				}
				return
			}
			if ev.Type == storage.EventPut {
				e.push(entry{key: ev.Key, rev: ev.Revision, due: e.cfg.Clock.Now().Add(e.cfg.TTL)})
			}
		case <-tick.C():
			e.expireDue(ctx)
		}
	}
}

func (e *Expirer) push(en entry) {
	if n := len(e.queue); n > 0 && en.due.Before(e.queue[n-1].due) {
		// The clock stepped back: keep the queue sorted by due.
		en.due = e.queue[n-1].due
	}
	e.queue = append(e.queue, en)
	e.pending.Inc()
}

// expireDue deletes every due key still at its queued revision. A delete
// that fails for another reason than the key having moved on stays queued
// for the next tick.
func (e *Expirer) expireDue(ctx context.Context) {
	now := e.cfg.Clock.Now()
	for e.head < len(e.queue) && !e.queue[e.head].due.After(now) {
		en := e.queue[e.head]
		_, _, err := e.cfg.Store.Delete(ctx, en.key, en.rev)
		switch {
		case err == nil:
			e.expired.Inc()
		case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
		default:
			e.cfg.Logger.Warn("expiry: delete failed; retrying", "key", en.key, "err", err)
			return
		}
		e.queue[e.head] = entry{}
		e.head++
		e.pending.Dec()
	}
	// Reclaim the consumed front once it is most of the slice.
	if e.head > 1024 && e.head*2 > len(e.queue) {
		e.queue = append(e.queue[:0:0], e.queue[e.head:]...)
		e.head = 0
	}
}

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// StoreShard is a store that holds some resource types instead of
// Config.Store: upstream's --etcd-servers-overrides, the way a large
// cluster moves events, leases or pods into an etcd of their own.
type StoreShard struct {
	// Name names the shard in /healthz, /readyz and componentstatuses
	// (default "etcd-N", N its position counting Config.Store as 0).
	Name  string
	Store storage.Store
	// Resources are the stored group resources the shard holds; every
	// version and every API served over one resource's storage (core and
	// events.k8s.io events) follows it. A resource may be named once.
	Resources []schema.GroupResource
}

// CoordinatedCompactor is a store several API servers share that lets
// exactly one of them compact each interval (upstream's compaction lease
// in etcd). Stores without it are compacted by the server itself.
type CoordinatedCompactor interface {
	// CompactCoordinated compacts to revision unless another server did
	// this interval; compacted says whether this call did.
	CompactCoordinated(ctx context.Context, revision int64) (compacted bool, err error)
}

// TTLWriter is a store that expires keys itself (etcd's leases): events
// written through it expire there, and the server runs no expiry loop of
// its own for them, which with several API servers would delete each
// event once per server.
type TTLWriter interface {
	CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error)
	UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration) (int64, error)
}

// shard is one store and the name it is reported under.
type shard struct {
	name  string
	store storage.Store
}

// shardHealthTimeout bounds each shard's health check in /healthz,
// /readyz and componentstatuses: upstream's --etcd-healthcheck-timeout
// and --etcd-readycheck-timeout default, so a stuck store answers "not
// ready" instead of hanging the probe.
const shardHealthTimeout = 2 * time.Second

// shardSet routes each stored group resource to its store.
type shardSet struct {
	all []shard // all[0] is Config.Store
	by  map[schema.GroupResource]int
}

func newShardSet(def storage.Store, extra []StoreShard) (*shardSet, error) {
	s := &shardSet{all: []shard{{name: "etcd-0", store: def}}, by: map[schema.GroupResource]int{}}
	for i, sh := range extra {
		if sh.Store == nil {
			return nil, fmt.Errorf("apiserver: store shard %d (%s) has no store", i+1, sh.Name)
		}
		name := sh.Name
		if name == "" {
			name = fmt.Sprintf("etcd-%d", i+1)
		}
		s.all = append(s.all, shard{name: name, store: sh.Store})
		for _, gr := range sh.Resources {
			if prev, dup := s.by[gr]; dup {
				return nil, fmt.Errorf("apiserver: %s is assigned to both store shard %s and %s", gr, s.all[prev].name, name)
			}
			s.by[gr] = i + 1
		}
	}
	return s, nil
}

// storeFor is the store holding the stored group resource gr.
func (s *shardSet) storeFor(gr schema.GroupResource) storage.Store {
	return s.all[s.by[gr]].store
}

// nameFor is the name of the shard holding gr.
func (s *shardSet) nameFor(gr schema.GroupResource) string {
	return s.all[s.by[gr]].name
}

// resources lists, for messages, what a shard holds.
func (s *shardSet) resources(i int) string {
	if i == 0 {
		return "default"
	}
	var out []string
	for gr, j := range s.by {
		if j == i {
			out = append(out, gr.String())
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// health checks every shard at once, each within shardHealthTimeout, and
// names each failing one and why: "etcd-1 (pods): context deadline
// exceeded".
func (s *shardSet) health(ctx context.Context) error {
	errs := make([]error, len(s.all))
	var wg sync.WaitGroup
	for i, sh := range s.all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, shardHealthTimeout)
			defer cancel()
			errs[i] = boundedHealth(ctx, sh.store)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s (%s): %w", sh.name, s.resources(i), errs[i])
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// boundedHealth returns when ctx ends even if the store's Health does
// not honour it: a probe must never hang.
func boundedHealth(ctx context.Context, st storage.Store) error {
	done := make(chan error, 1)
	go func() { done <- st.Health(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer within %s: %w", shardHealthTimeout, ctx.Err())
	}
}

// startCompaction keeps compacting one shard's history to the revision seen one
// interval ago, so a watch resuming within an interval never hits a
// compacted revision (upstream's five-minute rule). A shared store
// (CoordinatedCompactor) is compacted by whichever server wins the
// interval.
func (s *Server) startCompaction(sh shard) {
	var previous int64
	s.every(s.cfg.CompactionInterval, time.Minute, func(ctx context.Context) {
		if previous > 0 {
			if err := compactShard(ctx, sh.store, previous); err != nil {
				s.log.Warn("compaction failed", "shard", sh.name, "revision", previous, "err", err)
			}
		}
		if rev, err := sh.store.CurrentRevision(ctx); err == nil {
			previous = rev
		}
	})
}

func compactShard(ctx context.Context, st storage.Store, rev int64) error {
	if cc, ok := st.(CoordinatedCompactor); ok {
		_, err := cc.CompactCoordinated(ctx, rev)
		return err
	}
	return st.Compact(ctx, rev)
}

// ttlStore writes through a TTLWriter with one fixed TTL: events' store
// when the backend expires keys itself.
type ttlStore struct {
	storage.Store
	w   TTLWriter
	ttl time.Duration
}

func (t *ttlStore) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return t.w.CreateWithTTL(ctx, key, value, t.ttl)
}

func (t *ttlStore) Update(ctx context.Context, key string, value []byte, expected int64) (int64, error) {
	return t.w.UpdateWithTTL(ctx, key, value, expected, t.ttl)
}

// eventsGR is where both event APIs are stored.
func eventsGR() schema.GroupResource { return schema.GroupResource{Resource: "events"} }

// storeForResource is the store a stored group resource's handler writes
// through: its shard's, with events expiring in the store when the store
// can expire keys and a TTL is set.
func (s *Server) storeForResource(gr schema.GroupResource) storage.Store {
	st := s.shards.storeFor(gr)
	if gr == eventsGR() && s.cfg.EventTTL > 0 {
		if w, ok := st.(TTLWriter); ok {
			return &ttlStore{Store: st, w: w, ttl: s.cfg.EventTTL}
		}
	}
	return st
}

// eventsExpireInStore reports whether events' store expires them itself,
// so the server's own expiry loop is not needed.
func (s *Server) eventsExpireInStore() bool {
	_, ok := s.shards.storeFor(eventsGR()).(TTLWriter)
	return ok
}

// namedCheck words a failed check as upstream's health endpoints do,
// "[-]etcd-readiness failed: …" once written, so probes and people
// reading them find the check's upstream name.
func namedCheck(name string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s failed: %s", name, strings.ReplaceAll(err.Error(), "\n", "; "))
}

// warnUnservedShards logs shard resources no built-in resource is stored
// as: a typo, or a custom resource not defined yet (which will follow its
// shard once its CRD is created).
func (s *Server) warnUnservedShards() {
	stored := map[schema.GroupResource]bool{}
	for _, h := range s.handlers {
		stored[s.cfg.Registry.StorageResource(h.res).GroupVersionResource().GroupResource()] = true
	}
	for gr, i := range s.shards.by {
		if !stored[gr] {
			s.log.Warn("a store shard names a resource that is not built in; it holds it only if a CustomResourceDefinition defines it",
				"shard", s.shards.all[i].name, "resource", gr.String())
		}
	}
}

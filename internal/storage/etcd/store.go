package etcd

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Store is a storage.Store over an etcd cluster. It is safe for concurrent
// use.
type Store struct {
	cfg    Config
	cli    *clientv3.Client
	prefix string // cfg.Prefix; etcd keys are prefix + layout(key)
	layout *KeyLayout

	// ctx ends when the store closes; every request and watch is bound
	// to it. wg joins the store's own goroutines (watches, the compaction
	// follower, the DB size poller).
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	once   sync.Once
	// goMu orders goroutine starts (wg.Add) before Close's wg.Wait.
	goMu sync.Mutex

	// compacted is the newest compaction revision this store knows of
	// (compact.go says where it learns them).
	compacted atomic.Int64
	compactMu struct {
		sync.Mutex
		// version is compact_rev_key's version as last seen: the ticket
		// for the next coordinated compaction.
		version int64
	}

	// streams numbers watch streams (watch.go, ownStream).
	streams atomic.Int64

	leases  leaseManager
	metrics *metrics
}

var _ storage.Store = (*Store)(nil)

// New connects to etcd. It does not wait for etcd to answer: a store over
// an unreachable etcd is returned, its requests fail with ErrUnavailable
// and Health says why, and it recovers by itself when etcd comes back.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.fillDefaults(); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:            cfg.Endpoints,
		TLS:                  cfg.TLS,
		DialTimeout:          cfg.DialTimeout,
		DialKeepAliveTime:    10 * time.Second,
		DialKeepAliveTimeout: 5 * time.Second,
		PermitWithoutStream:  true,
		Logger:               zap.NewNop(),
		// gRPC's default reconnect backoff grows to two minutes: a member
		// back from a restart would wait that long for its clients (and
		// a watch pinned to it, for its events). Cap it at a few seconds.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: cfg.DialTimeout,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", cfg.Endpoints, err)
	}
	s := &Store{
		cfg:    cfg,
		cli:    cli,
		prefix: cfg.Prefix,
		layout: cfg.KeyLayout,
	}
	// The store outlives New's context: ctx only carries values.
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.leases.init(cli)
	if s.metrics, err = newMetrics(cfg.Metrics); err != nil {
		cli.Close()
		return nil, err
	}
	s.wg.Add(2)
	go s.followCompactions()
	go s.pollDBSize()
	return s, nil
}

// goStart registers a goroutine with wg; false once the store is closed.
func (s *Store) goStart() bool {
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.isClosed() {
		return false
	}
	s.wg.Add(1)
	return true
}

// Client is the underlying etcd client, for callers that need etcd itself
// (the API server's etcd health and version endpoints). Closing the store
// closes it.
func (s *Store) Client() *clientv3.Client { return s.cli }

// Close stops every watch and the background work and closes the client.
// It is idempotent; requests after it fail with ErrClosed.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() {
		s.goMu.Lock()
		s.closed.Store(true)
		s.goMu.Unlock()
		s.cancel()
		s.wg.Wait()
		err = s.cli.Close()
		if err != nil && s.ctx.Err() != nil {
			// The client reports the cancellation of its own requests.
			err = nil
		}
	})
	return err
}

func (s *Store) isClosed() bool { return s.closed.Load() }

func (s *Store) checkOpen() error {
	if s.isClosed() {
		return storage.ErrClosed
	}
	return nil
}

// etcdKey maps a Myriad key to the etcd key.
func (s *Store) etcdKey(key string) (string, error) {
	if !strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("%w %q: keys start with /", ErrBadKey, key)
	}
	k, ok := s.layout.ToEtcd(key)
	if !ok {
		return "", fmt.Errorf("%w %q: it would read back as %q under the key layout", ErrBadKey, key, s.layout.FromEtcd(key))
	}
	return s.prefix + k, nil
}

// myriadKey maps an etcd key back; ok is false for keys outside the prefix.
func (s *Store) myriadKey(ekey []byte) (string, bool) {
	if !bytes.HasPrefix(ekey, []byte(s.prefix)) {
		return "", false
	}
	rest := string(ekey[len(s.prefix):])
	if !strings.HasPrefix(rest, "/") {
		return "", false // "/registryfoo": a sibling prefix
	}
	return s.layout.FromEtcd(rest), true
}

// etcdPrefix maps a Myriad key prefix to the etcd prefix to read and says
// whether the keys read must be filtered (keys.go, PrefixToEtcd).
func (s *Store) etcdPrefix(prefix string) (ep string, filter bool) {
	p, exact := s.layout.PrefixToEtcd(prefix)
	if !exact || !strings.HasPrefix(p, "/") {
		// Everything below the store prefix, and only that: "/registry/"
		// rather than "/registry", which would also match "/registryfoo".
		return s.prefix + "/", prefix != ""
	}
	return s.prefix + p, false
}

func (s *Store) kv(kv *mvccpb.KeyValue) (storage.KeyValue, bool) {
	key, ok := s.myriadKey(kv.Key)
	if !ok {
		return storage.KeyValue{}, false
	}
	return storage.KeyValue{Key: key, Value: nonNil(kv.Value), ModRevision: kv.ModRevision, CreateRevision: kv.CreateRevision}, true
}

// nonNil keeps an empty value distinguishable from an absent one: the
// client decodes an empty protobuf bytes field as nil.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// leaderCtx makes etcd refuse a request at once on a member that has lost
// its leader, instead of queueing it until the request times out; that
// refusal is what lets writes be retried safely (errors.go).
func leaderCtx(ctx context.Context) context.Context { return clientv3.WithRequireLeader(ctx) }

// Get implements storage.Store: a linearizable read of key.
func (s *Store) Get(ctx context.Context, key string) (storage.KeyValue, error) {
	defer s.metrics.observe("get", key, time.Now())
	ek, err := s.etcdKey(key)
	if err != nil {
		return storage.KeyValue{}, err
	}
	var resp *clientv3.GetResponse
	err = s.do(ctx, false, "get", key, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(leaderCtx(ctx), ek)
		return err
	})
	if err != nil {
		s.metrics.fail("get", key)
		return storage.KeyValue{}, err
	}
	if len(resp.Kvs) == 0 {
		return storage.KeyValue{}, fmt.Errorf("etcd: get %q: %w", key, storage.ErrNotFound)
	}
	kv, _ := s.kv(resp.Kvs[0])
	return kv, nil
}

// List implements storage.Store: one linearizable snapshot of the prefix.
// A prefix larger than ListPageSize is read in pages pinned to the first
// page's revision; if that revision is compacted away mid-list, the list
// starts over at a new one.
func (s *Store) List(ctx context.Context, prefix string) ([]storage.KeyValue, int64, error) {
	defer s.metrics.observe("list", prefix, time.Now())
	ep, filter := s.etcdPrefix(prefix)
	end := clientv3.GetPrefixRangeEnd(ep)
	for restarts := 0; ; restarts++ {
		out, rev, err := s.listOnce(ctx, prefix, ep, end, filter)
		if err == nil {
			if filter {
				// Translated keys need not keep etcd's order.
				sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
			}
			return out, rev, nil
		}
		if !isCompacted(err) || restarts >= 3 {
			s.metrics.fail("list", prefix)
			return nil, 0, err
		}
	}
}

func (s *Store) listOnce(ctx context.Context, prefix, ep, end string, filter bool) ([]storage.KeyValue, int64, error) {
	var out []storage.KeyValue
	var rev int64
	from := ep
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(s.cfg.ListPageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		var resp *clientv3.GetResponse
		err := s.do(ctx, false, "list", prefix, func(ctx context.Context) (err error) {
			resp, err = s.cli.Get(leaderCtx(ctx), from, opts...)
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		if rev == 0 {
			rev = resp.Header.Revision
			if out == nil && resp.Count > 0 {
				out = make([]storage.KeyValue, 0, min(resp.Count, 1<<20))
			}
		}
		for _, kv := range resp.Kvs {
			item, ok := s.kv(kv)
			if !ok || (filter && !strings.HasPrefix(item.Key, prefix)) {
				continue
			}
			out = append(out, item)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return out, rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// Create implements storage.Store: a transaction on the key's create
// revision being 0.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	return s.create(ctx, key, value, 0)
}

func (s *Store) create(ctx context.Context, key string, value []byte, lease clientv3.LeaseID) (int64, error) {
	defer s.metrics.observe("create", key, time.Now())
	ek, err := s.etcdKey(key)
	if err != nil {
		return 0, err
	}
	var resp *clientv3.TxnResponse
	err = s.do(ctx, true, "create", key, func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(leaderCtx(ctx)).
			If(clientv3.Compare(clientv3.CreateRevision(ek), "=", 0)).
			Then(clientv3.OpPut(ek, string(value), clientv3.WithLease(lease))).
			Commit()
		return err
	})
	if err != nil {
		s.metrics.fail("create", key)
		return 0, err
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("etcd: create %q: %w", key, storage.ErrExists)
	}
	return resp.Header.Revision, nil
}

// Update implements storage.Store: a transaction on the key's mod
// revision, reading the current value in the same transaction when it
// differs.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedRevision int64) (int64, error) {
	return s.update(ctx, key, value, expectedRevision, 0)
}

func (s *Store) update(ctx context.Context, key string, value []byte, expected int64, lease clientv3.LeaseID) (int64, error) {
	defer s.metrics.observe("update", key, time.Now())
	ek, err := s.etcdKey(key)
	if err != nil {
		return 0, err
	}
	if expected <= 0 {
		// ModRevision 0 would match an absent key and create it.
		return 0, s.conflictOrMissing(ctx, "update", key, ek, expected)
	}
	var resp *clientv3.TxnResponse
	err = s.do(ctx, true, "update", key, func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(leaderCtx(ctx)).
			If(clientv3.Compare(clientv3.ModRevision(ek), "=", expected)).
			Then(clientv3.OpPut(ek, string(value), clientv3.WithLease(lease))).
			Else(clientv3.OpGet(ek)).
			Commit()
		return err
	})
	if err != nil {
		s.metrics.fail("update", key)
		return 0, err
	}
	if !resp.Succeeded {
		return 0, s.mismatch("update", key, expected, resp.Responses[0].GetResponseRange().Kvs)
	}
	return resp.Header.Revision, nil
}

// mismatch is the error of a failed compare: the key is gone, or it has
// another revision (returned so the caller can retry without a read).
func (s *Store) mismatch(op, key string, expected int64, kvs []*mvccpb.KeyValue) error {
	if len(kvs) == 0 {
		return fmt.Errorf("etcd: %s %q: %w", op, key, storage.ErrNotFound)
	}
	cur, _ := s.kv(kvs[0])
	cur.Key = key
	return &storage.ConflictError{Key: key, Expected: expected, Current: cur}
}

func (s *Store) conflictOrMissing(ctx context.Context, op, key, ek string, expected int64) error {
	var resp *clientv3.GetResponse
	err := s.do(ctx, false, op, key, func(ctx context.Context) (err error) {
		resp, err = s.cli.Get(leaderCtx(ctx), ek)
		return err
	})
	if err != nil {
		return err
	}
	return s.mismatch(op, key, expected, resp.Kvs)
}

// Delete implements storage.Store.
func (s *Store) Delete(ctx context.Context, key string, expectedRevision int64) (storage.KeyValue, int64, error) {
	defer s.metrics.observe("delete", key, time.Now())
	ek, err := s.etcdKey(key)
	if err != nil {
		return storage.KeyValue{}, 0, err
	}
	cmp := clientv3.Compare(clientv3.CreateRevision(ek), ">", 0)
	if expectedRevision != 0 {
		cmp = clientv3.Compare(clientv3.ModRevision(ek), "=", expectedRevision)
	}
	var resp *clientv3.TxnResponse
	err = s.do(ctx, true, "delete", key, func(ctx context.Context) (err error) {
		resp, err = s.cli.Txn(leaderCtx(ctx)).
			If(cmp).
			Then(clientv3.OpDelete(ek, clientv3.WithPrevKV())).
			Else(clientv3.OpGet(ek)).
			Commit()
		return err
	})
	if err != nil {
		s.metrics.fail("delete", key)
		return storage.KeyValue{}, 0, err
	}
	if !resp.Succeeded {
		return storage.KeyValue{}, 0, s.mismatch("delete", key, expectedRevision, resp.Responses[0].GetResponseRange().Kvs)
	}
	prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prev) == 0 {
		// The compare saw the key, so the delete removed it.
		return storage.KeyValue{}, 0, fmt.Errorf("etcd: delete %q: etcd returned no previous value", key)
	}
	kv, _ := s.kv(prev[0])
	kv.Key = key
	return kv, resp.Header.Revision, nil
}

// CurrentRevision implements storage.Store: etcd's revision as of a
// linearizable read.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	defer s.metrics.observe("get_revision", "", time.Now())
	var resp *clientv3.GetResponse
	err := s.do(ctx, false, "current revision", "", func(ctx context.Context) (err error) {
		// Any key will do: the header carries the store's revision.
		resp, err = s.cli.Get(leaderCtx(ctx), s.prefix+"/", clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		s.metrics.fail("get_revision", "")
		return 0, err
	}
	return resp.Header.Revision, nil
}

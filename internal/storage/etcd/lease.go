package etcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Lease sharing, as upstream's leaseManager does it: writes with a TTL
// within a short window share one etcd lease, so 100,000 events make a few
// hundred leases, not 100,000. A lease is granted for the TTL plus a reuse
// window (5% of the TTL, at most a minute) and reused while it still
// outlives the new write's TTL but by no more than the window, for at most
// leaseMaxObjects writes. A key therefore expires up to one window late,
// never early.
const (
	leaseReuseMax     = 60 * time.Second
	leaseReusePercent = 0.05
	leaseMaxObjects   = 1000
)

type leaseManager struct {
	cli *clientv3.Client
	// mu is held across the grant, so concurrent writes wait for one
	// lease instead of each granting its own.
	mu       sync.Mutex
	id       clientv3.LeaseID
	expires  time.Time
	attached int64
	// maxObjects is leaseMaxObjects; tests lower it.
	maxObjects int64
	now        func() time.Time
}

func (l *leaseManager) init(cli *clientv3.Client) {
	l.cli = cli
	l.now = time.Now
	l.maxObjects = leaseMaxObjects
}

// get returns a lease that lives at least ttl (rounded up to a second).
func (l *leaseManager) get(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	secs := int64((ttl + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	reuse := min(time.Duration(float64(secs)*leaseReusePercent*float64(time.Second)), leaseReuseMax)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	need := now.Add(time.Duration(secs) * time.Second)
	if l.id != 0 && need.Before(l.expires) && !need.Add(reuse).Before(l.expires) && l.attached < l.maxObjects {
		l.attached++
		return l.id, nil
	}
	grant := secs + int64(reuse/time.Second)
	resp, err := l.cli.Grant(ctx, grant)
	if err != nil {
		return 0, err
	}
	l.id, l.expires, l.attached = resp.ID, now.Add(time.Duration(grant)*time.Second), 1
	return resp.ID, nil
}

// CreateWithTTL is Create with the key expiring after ttl (rounded up to
// a second, and up to a reuse window later; see leaseManager). An expired
// key disappears as a delete event at a new revision. Used for events.
func (s *Store) CreateWithTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("etcd: create %q: ttl %v must be positive", key, ttl)
	}
	lease, err := s.lease(ctx, key, ttl)
	if err != nil {
		return 0, err
	}
	return s.create(ctx, key, value, lease)
}

// UpdateWithTTL is Update with the key expiring after ttl from now, as
// for CreateWithTTL.
func (s *Store) UpdateWithTTL(ctx context.Context, key string, value []byte, expectedRevision int64, ttl time.Duration) (int64, error) {
	if ttl <= 0 {
		return 0, fmt.Errorf("etcd: update %q: ttl %v must be positive", key, ttl)
	}
	lease, err := s.lease(ctx, key, ttl)
	if err != nil {
		return 0, err
	}
	return s.update(ctx, key, value, expectedRevision, lease)
}

func (s *Store) lease(ctx context.Context, key string, ttl time.Duration) (clientv3.LeaseID, error) {
	defer s.metrics.observe("grant_lease", key, time.Now())
	var id clientv3.LeaseID
	// A grant that may have happened is only a lease nobody uses; it
	// expires by itself, so granting retries like a read.
	err := s.do(ctx, false, "grant lease", key, func(ctx context.Context) (err error) {
		id, err = s.leases.get(leaderCtx(ctx), ttl)
		return err
	})
	if err != nil {
		s.metrics.fail("grant_lease", key)
	}
	return id, err
}

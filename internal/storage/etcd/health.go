package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// statusTimeout bounds one member's status request in Health's report
// and in DBSize: a member that does not answer in this time is reported
// as not answering.
const statusTimeout = time.Second

// Health implements storage.Store: one linearizable read that needs a
// leader. When it fails, the error says why, from every member's status:
// no leader, members unreachable, or no answer in time. It wraps
// ErrUnavailable.
func (s *Store) Health(ctx context.Context) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.HealthTimeout)
	defer cancel()
	start := time.Now()
	// Two attempts of half the timeout each: one member that stopped
	// answering (its connection not yet known dead) must not make a
	// healthy cluster look down.
	var err error
	for attempt := 0; attempt < 2 && ctx.Err() == nil; attempt++ {
		actx, acancel := context.WithTimeout(ctx, s.cfg.HealthTimeout/2)
		_, err = s.cli.Get(leaderCtx(actx), s.prefix+"/", clientv3.WithCountOnly())
		acancel()
		if err == nil {
			return nil
		}
		if transient, _ := retryable(err); !transient && actx.Err() == nil {
			break
		}
	}
	if s.isClosed() {
		return storage.ErrClosed
	}
	reason := "etcd unreachable"
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrGRPCNoLeader):
		reason = "etcd has no leader (quorum lost?)"
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		reason = fmt.Sprintf("etcd did not answer within %v", time.Since(start).Round(time.Millisecond))
	}
	return fmt.Errorf("%w: %s [%s]: %w", ErrUnavailable, reason, s.memberSummary(), err)
}

// memberSummary reports what each endpoint says about itself, for a
// health error a person can act on.
func (s *Store) memberSummary() string {
	eps := s.cli.Endpoints()
	parts := make([]string, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.ctx, statusTimeout)
			defer cancel()
			st, err := s.cli.Status(ctx, ep)
			switch {
			case err != nil && !reachable(ep):
				// The client waits for a connection until the deadline
				// either way; a dial tells refused from silent.
				parts[i] = ep + ": unreachable"
			case err != nil && ctx.Err() != nil:
				parts[i] = ep + ": no answer"
			case err != nil:
				parts[i] = ep + ": " + err.Error()
			case st.Leader == 0:
				parts[i] = ep + ": up, no leader"
			default:
				parts[i] = fmt.Sprintf("%s: up, leader %x", ep, st.Leader)
			}
		}()
	}
	wg.Wait()
	return strings.Join(parts, "; ")
}

// reachable says whether a TCP connection to endpoint ep can be opened.
func reachable(ep string) bool {
	host := ep
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		host = u.Host
	}
	c, err := net.DialTimeout("tcp", host, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// DBSize returns the size of etcd's database file, the largest any
// reachable member reports (members' files differ slightly).
func (s *Store) DBSize(ctx context.Context) (int64, error) {
	if err := s.checkOpen(); err != nil {
		return 0, err
	}
	sizes, err := s.dbSizes(ctx)
	var size int64
	for _, v := range sizes {
		size = max(size, v)
	}
	if len(sizes) == 0 {
		return 0, err
	}
	return size, nil
}

// dbSizes asks every endpoint for its database size; err is the last
// failure, returned only when no endpoint answered.
func (s *Store) dbSizes(ctx context.Context) (map[string]int64, error) {
	eps := s.cli.Endpoints()
	var mu sync.Mutex
	sizes := map[string]int64{}
	var lastErr error
	var wg sync.WaitGroup
	for _, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			st, err := s.cli.Status(ctx, ep)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				lastErr = fmt.Errorf("etcd: status of %s: %w", ep, err)
				return
			}
			sizes[ep] = st.DbSize
		}()
	}
	wg.Wait()
	if len(sizes) == 0 && lastErr == nil {
		lastErr = errors.New("etcd: no endpoints")
	}
	return sizes, lastErr
}

// pollDBSize refreshes etcd_db_total_size_in_bytes.
func (s *Store) pollDBSize() {
	defer s.wg.Done()
	if s.metrics == nil {
		return
	}
	for {
		sizes, _ := s.dbSizes(s.ctx)
		for ep, size := range sizes {
			s.metrics.setDBSize(ep, size)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(s.cfg.DBSizeInterval):
		}
	}
}

package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Errors of this backend, beyond the storage package's sentinels.
var (
	// ErrOutcomeUnknown wraps a failed write that may nevertheless have
	// been applied (the request reached etcd, then the leader changed or
	// the request timed out). It is never retried here: a retried create
	// would report ErrExists for its own write, a retried update a
	// conflict. The caller re-reads if it must know.
	ErrOutcomeUnknown = errors.New("etcd: write outcome unknown")
	// ErrUnavailable wraps failures to reach a serving etcd: no leader,
	// no reachable member, or no answer in time.
	ErrUnavailable = errors.New("etcd: unavailable")
	// ErrBadKey reports a key the store cannot hold (one not starting with
	// "/", or one the key layout cannot translate reversibly).
	ErrBadKey = errors.New("etcd: invalid key")
)

// Retry pacing for reads and for writes etcd refused before proposing.
const (
	backoffStart = 25 * time.Millisecond
	backoffMax   = time.Second
)

// retryable says whether err is transient. notProposed says whether a
// write that failed with it certainly did not reach the raft log.
func retryable(err error) (transient, notProposed bool) {
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrGRPCNoLeader):
		// Writes run under WithRequireLeader: a member without a leader
		// refuses them before proposing.
		return true, true
	case errors.Is(err, rpctypes.ErrTooManyRequests), errors.Is(err, rpctypes.ErrGRPCRequestTooManyRequests):
		return true, true
	case errors.Is(err, rpctypes.ErrNotCapable), errors.Is(err, rpctypes.ErrGRPCNotCapable):
		return true, true
	case errors.Is(err, rpctypes.ErrLeaderChanged), errors.Is(err, rpctypes.ErrGRPCLeaderChanged),
		errors.Is(err, rpctypes.ErrTimeout), errors.Is(err, rpctypes.ErrGRPCTimeout),
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail), errors.Is(err, rpctypes.ErrGRPCTimeoutDueToLeaderFail),
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost), errors.Is(err, rpctypes.ErrGRPCTimeoutDueToConnectionLost),
		errors.Is(err, rpctypes.ErrTimeoutWaitAppliedIndex), errors.Is(err, rpctypes.ErrGRPCTimeoutWaitAppliedIndex):
		return true, false
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return true, false
		}
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) && ee.Code() == codes.Unavailable {
		return true, false
	}
	return false, false
}

// opCtx bounds one store operation by the request timeout when the
// caller's deadline is later (or absent), and ends it when the store
// closes.
func (s *Store) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// do runs one etcd call under opCtx, retrying transient failures with
// backoff until the operation's deadline. Reads retry every transient
// failure; writes (write=true) only those etcd refused before proposing.
// The error returned is classified by s.wrap.
func (s *Store) do(ctx context.Context, write bool, op, key string, fn func(ctx context.Context) error) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	backoff := backoffStart
	for attempt := 1; ; attempt++ {
		err := s.attempt(octx, write, fn)
		if err == nil {
			return nil
		}
		transient, notProposed := retryable(err)
		if !transient || (write && !notProposed) || octx.Err() != nil {
			return s.wrap(ctx, octx, write, op, key, err)
		}
		s.cfg.Logger.Debug("etcd request failed; retrying", "op", op, "key", key, "attempt", attempt, "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-octx.Done():
			t.Stop()
			return s.wrap(ctx, octx, write, op, key, err)
		}
		backoff = min(2*backoff, backoffMax)
	}
}

// attempt runs fn once. A read gets a third of the request timeout, so
// that one member that stopped answering (its connection not yet known
// dead) costs a retry on another member, not the whole request; a write
// gets all of it, since a write that timed out cannot be retried.
func (s *Store) attempt(ctx context.Context, write bool, fn func(ctx context.Context) error) error {
	if write {
		return fn(ctx)
	}
	actx, cancel := context.WithTimeout(ctx, s.attemptTimeout())
	defer cancel()
	err := fn(actx)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		// The attempt's own deadline, not the request's: transient.
		return fmt.Errorf("%w: attempt timed out", rpctypes.ErrGRPCTimeout)
	}
	return err
}

// attemptTimeout is how long one read attempt may take.
func (s *Store) attemptTimeout() time.Duration {
	return max(s.cfg.RequestTimeout/3, 50*time.Millisecond)
}

// wrap turns an etcd client error into the error the caller sees:
// the caller's own cancellation as is, a closed store as ErrClosed, and
// everything else with the operation, the key and what it means.
func (s *Store) wrap(ctx, octx context.Context, write bool, op, key string, err error) error {
	if s.isClosed() {
		return fmt.Errorf("etcd: %s %q: %w", op, key, storage.ErrClosed)
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("etcd: %s %q: %w", op, key, cerr)
	}
	transient, notProposed := retryable(err)
	switch {
	case errors.Is(err, rpctypes.ErrNoLeader), errors.Is(err, rpctypes.ErrGRPCNoLeader):
		// Refused before proposing, so even a write is known not applied.
		return fmt.Errorf("etcd: %s %q: etcd has no leader (quorum lost?): %w: %w", op, key, ErrUnavailable, err)
	case octx.Err() != nil && write:
		return fmt.Errorf("etcd: %s %q: no answer from etcd at %v within %v; the write may or may not have been applied: %w: %w: %w",
			op, key, s.cfg.Endpoints, s.cfg.RequestTimeout, ErrUnavailable, ErrOutcomeUnknown, err)
	case octx.Err() != nil:
		return fmt.Errorf("etcd: %s %q: no answer from etcd at %v within %v: %w: %w", op, key, s.cfg.Endpoints, s.cfg.RequestTimeout, ErrUnavailable, err)
	case write && transient && !notProposed:
		return fmt.Errorf("etcd: %s %q: the write may or may not have been applied: %w: %w", op, key, ErrOutcomeUnknown, err)
	case transient:
		return fmt.Errorf("etcd: %s %q: %w: %w", op, key, ErrUnavailable, err)
	}
	return fmt.Errorf("etcd: %s %q: %w", op, key, err)
}

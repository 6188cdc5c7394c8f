package apiserver

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/storage"
)

// Upstream's lease endpoint reconciler (--endpoint-reconciler-type=lease):
// every API server keeps a short-lived key naming its address, and each
// points the kubernetes Service at every address with a live key. With
// one Endpoints object written by each server at start, the last server
// to start would be the only one in-cluster clients reach.
const (
	// endpointLeasePrefix holds one key per API server address, outside
	// every resource's prefix (as serviceClaimsPrefix).
	endpointLeasePrefix = "/myriad/apiserverleases/"
	// endpointLeaseTTL and endpointLeaseInterval are upstream's
	// defaults: a server that stops renewing drops out of the Endpoints
	// within 15 s; renewals every 10 s.
	endpointLeaseTTL      = 15 * time.Second
	endpointLeaseInterval = 10 * time.Second
)

// endpointLeases is this server's lease on the kubernetes Service.
type endpointLeases struct {
	s    *Server
	st   storage.Store
	meta metav1.ObjectMeta
	key  string
}

// startEndpointLeases takes this server's lease, points the Endpoints at
// every live server, and renews both every endpointLeaseInterval until
// Stop, which releases the lease (releaseEndpointLease).
func (s *Server) startEndpointLeases(ctx context.Context, meta metav1.ObjectMeta) error {
	l := &endpointLeases{s: s, meta: meta, key: endpointLeasePrefix + s.cfg.PublicAddress.String(),
		st: s.shards.storeFor(schema.GroupResource{Resource: "endpoints"})}
	if err := l.renew(ctx); err != nil {
		return err
	}
	s.endpointLease = l
	s.every(endpointLeaseInterval, endpointLeaseInterval, func(ctx context.Context) {
		if err := l.renew(ctx); err != nil {
			s.log.Warn("renewing the kubernetes Service endpoint lease", "err", err)
		}
	})
	return nil
}

// renew writes this server's lease and reconciles the Endpoints with
// every live one. A lease's value is its expiry; a store that expires
// keys itself (TTLWriter, etcd) also deletes it then.
func (l *endpointLeases) renew(ctx context.Context) error {
	now := l.s.clock.Now()
	val := []byte(strconv.FormatInt(now.Add(endpointLeaseTTL).UnixNano(), 10))
	ttlw, hasTTL := l.st.(TTLWriter)
	kv, err := l.st.Get(ctx, l.key)
	switch {
	case errors.Is(err, storage.ErrNotFound) && hasTTL:
		_, err = ttlw.CreateWithTTL(ctx, l.key, val, endpointLeaseTTL)
	case errors.Is(err, storage.ErrNotFound):
		_, err = l.st.Create(ctx, l.key, val)
	case err != nil:
	case hasTTL:
		_, err = ttlw.UpdateWithTTL(ctx, l.key, val, kv.ModRevision, endpointLeaseTTL)
	default:
		_, err = l.st.Update(ctx, l.key, val, kv.ModRevision)
	}
	if err != nil && !errors.Is(err, storage.ErrExists) && !errors.Is(err, storage.ErrConflict) {
		return err // exists/conflict: a racing write of this very lease
	}
	return l.reconcile(ctx, now)
}

// reconcile points the Endpoints at every address with an unexpired
// lease, sorted so servers agree and do not rewrite it back and forth.
func (l *endpointLeases) reconcile(ctx context.Context, now time.Time) error {
	kvs, _, err := l.st.List(ctx, endpointLeasePrefix)
	if err != nil {
		return err
	}
	var addrs []netip.Addr
	for _, kv := range kvs {
		exp, err := strconv.ParseInt(string(kv.Value), 10, 64)
		addr, aerr := netip.ParseAddr(strings.TrimPrefix(kv.Key, endpointLeasePrefix))
		if err != nil || aerr != nil || time.Unix(0, exp).Before(now) {
			continue
		}
		addrs = append(addrs, addr)
	}
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return a.Compare(b) })
	if len(addrs) == 0 {
		return nil // every server is gone or going: leave the last state
	}
	return l.s.reconcileKubernetesEndpoints(ctx, l.meta, addrs)
}

// releaseEndpointLease drops this server's lease and its address from the
// Endpoints, so clients stop reaching a server that is shutting down.
// Best effort within a few seconds: the lease expires anyway.
func (s *Server) releaseEndpointLease() {
	l := s.endpointLease
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, _, err := l.st.Delete(ctx, l.key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.log.Warn("releasing the kubernetes Service endpoint lease", "err", err)
		return
	}
	if err := l.reconcile(ctx, s.clock.Now()); err != nil {
		s.log.Warn("removing this server from the kubernetes Service endpoints", "err", err)
	}
}

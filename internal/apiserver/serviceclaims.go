package apiserver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/admission/serviceip"
	"github.com/myriad-k8s/myriad/internal/storage"
)

// serviceClaimsPrefix is where ClusterIP and NodePort claims live, in the
// services' store: outside every resource's prefix (no API group lacks a
// dot but core), so no cache or list ever sees them.
const serviceClaimsPrefix = "/myriad/serviceclaims/"

// serviceClaimGrace is how old a claim no Service holds must be before
// repair removes it: younger ones may belong to a create in flight on
// another server.
const serviceClaimGrace = time.Minute

// serviceClaimRepairInterval is how often claims are repaired and the
// allocator resynced with other servers' allocations.
const serviceClaimRepairInterval = time.Minute

// storeClaims are serviceip.Claims as keys in a store: one key per held
// address or port, created with the store's create-if-absent, so of two
// servers claiming one item exactly one wins. A key's value is its owner
// and the claim's time, "namespace/name unixnano".
type storeClaims struct {
	st    storage.Store
	clock func() time.Time
}

func (c *storeClaims) key(item string) string { return serviceClaimsPrefix + item }

func (c *storeClaims) Claim(ctx context.Context, item, owner string) error {
	val := []byte(owner + " " + strconv.FormatInt(c.clock().UnixNano(), 10))
	_, err := c.st.Create(ctx, c.key(item), val)
	if !errors.Is(err, storage.ErrExists) {
		return err
	}
	kv, err := c.st.Get(ctx, c.key(item))
	if errors.Is(err, storage.ErrNotFound) {
		// Released meanwhile: try once more; a second loss is a loss.
		if _, err = c.st.Create(ctx, c.key(item), val); errors.Is(err, storage.ErrExists) {
			return serviceip.ErrClaimed
		}
		return err
	}
	if err != nil {
		return err
	}
	if o, _ := parseClaim(kv.Value); o != owner {
		return serviceip.ErrClaimed
	}
	return nil
}

func (c *storeClaims) Release(ctx context.Context, item, owner string) error {
	kv, err := c.st.Get(ctx, c.key(item))
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if o, _ := parseClaim(kv.Value); o != owner {
		return nil
	}
	_, _, err = c.st.Delete(ctx, c.key(item), kv.ModRevision)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrConflict) {
		return nil // released or re-claimed meanwhile
	}
	return err
}

func parseClaim(v []byte) (owner string, at time.Time) {
	o, ts, _ := strings.Cut(string(v), " ")
	n, _ := strconv.ParseInt(ts, 10, 64)
	return o, time.Unix(0, n)
}

// startServiceAllocations gives the allocator what the stored Services
// hold, before the server takes writes; then makes it claim in the
// services' store, claims what the stored Services hold (stores written
// before claims existed, or by a server that crashed between its write
// and its claim), and repairs claims every serviceClaimRepairInterval.
// One list of the Services serves the load and the first repair: at a
// million objects each list and decode of 80,000 Services was a second of
// the start.
func (s *Server) startServiceAllocations(ctx context.Context) error {
	h, ok := s.handlers[servicesGVR]
	if !ok {
		return nil
	}
	claims := &storeClaims{st: s.shards.storeFor(servicesGVR.GroupResource()), clock: s.clock.Now}
	claimKVs, svcs, err := listClaimsAndServices(ctx, h, claims, true)
	if err != nil {
		return fmt.Errorf("loading service allocations: %w", err)
	}
	s.services.Load(svcs)
	s.services.UseClaims(claims)
	if err := s.repairServiceClaimsFrom(ctx, claims, claimKVs, svcs, true); err != nil {
		return fmt.Errorf("service allocation claims: %w", err)
	}
	s.every(serviceClaimRepairInterval, time.Minute, func(ctx context.Context) {
		if err := s.repairServiceClaims(ctx, h, claims); err != nil {
			s.log.Warn("repairing service allocation claims", "err", err)
		}
	})
	return nil
}

// listClaimsAndServices lists the claims, then the Services. Claims
// first: a claim made after its list and a Service written after the
// Services' are both younger than the grace a repair gives them.
// Strict is storedServices'.
func listClaimsAndServices(ctx context.Context, h *resourceHandler, c *storeClaims, strict bool) ([]storage.KeyValue, []*corev1.Service, error) {
	claimKVs, _, err := c.st.List(ctx, serviceClaimsPrefix)
	if err != nil {
		return nil, nil, err
	}
	svcs, err := storedServices(ctx, h, strict)
	return claimKVs, svcs, err
}

// repairServiceClaims deletes claims older than the grace that no stored
// Service holds, and resyncs the allocator with what remains.
func (s *Server) repairServiceClaims(ctx context.Context, h *resourceHandler, c *storeClaims) error {
	// A Service that does not decode is reported by the cache; its
	// holdings stay claimed.
	claimKVs, svcs, err := listClaimsAndServices(ctx, h, c, false)
	if err != nil {
		return err
	}
	return s.repairServiceClaimsFrom(ctx, c, claimKVs, svcs, false)
}

// repairServiceClaimsFrom repairs the claims listed as claimKVs against
// the Services svcs (listed after them), first claiming what the Services
// hold and the claims lack when backfill is set.
func (s *Server) repairServiceClaimsFrom(ctx context.Context, c *storeClaims, claimKVs []storage.KeyValue, svcs []*corev1.Service, backfill bool) error {
	claimed := make(map[string]string, len(claimKVs)) // item -> owner, as listed
	for _, kv := range claimKVs {
		claimed[strings.TrimPrefix(kv.Key, serviceClaimsPrefix)], _ = parseClaim(kv.Value)
	}
	holds := map[string]string{} // item -> owner
	backfilled := false
	for _, svc := range svcs {
		own := svc.Namespace + "/" + svc.Name
		for _, item := range serviceip.HeldItems(svc) {
			holds[item] = own
			// Only what the list lacks: a restart over 10,000 Services
			// must not make 20,000 store round trips.
			if backfill && claimed[item] != own {
				backfilled = true
				if err := c.Claim(ctx, item, own); errors.Is(err, serviceip.ErrClaimed) {
					s.log.Warn("two Services hold one allocation", "item", item, "service", own)
				} else if err != nil {
					return err
				}
			}
		}
	}
	if backfilled {
		var err error
		if claimKVs, _, err = c.st.List(ctx, serviceClaimsPrefix); err != nil {
			return err
		}
	}
	var held []string
	now := s.clock.Now()
	for _, kv := range claimKVs {
		item := strings.TrimPrefix(kv.Key, serviceClaimsPrefix)
		own, at := parseClaim(kv.Value)
		if holds[item] != own && now.Sub(at) > serviceClaimGrace {
			if _, _, err := c.st.Delete(ctx, kv.Key, kv.ModRevision); err == nil {
				continue
			}
		}
		held = append(held, item)
	}
	s.services.Resync(held)
	return nil
}

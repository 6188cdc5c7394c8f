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

// startServiceClaims makes the allocator claim in the services' store,
// claims what the stored Services hold (stores written before claims
// existed, or by a server that crashed between its write and its claim),
// and repairs claims every serviceClaimRepairInterval.
func (s *Server) startServiceClaims(ctx context.Context) error {
	h, ok := s.handlers[servicesGVR]
	if !ok {
		return nil
	}
	claims := &storeClaims{st: s.shards.storeFor(servicesGVR.GroupResource()), clock: s.clock.Now}
	s.services.UseClaims(claims)
	if err := s.repairServiceClaims(ctx, h, claims, true); err != nil {
		return fmt.Errorf("service allocation claims: %w", err)
	}
	s.every(serviceClaimRepairInterval, time.Minute, func(ctx context.Context) {
		if err := s.repairServiceClaims(ctx, h, claims, false); err != nil {
			s.log.Warn("repairing service allocation claims", "err", err)
		}
	})
	return nil
}

// repairServiceClaims claims every stored Service's holdings (backfill),
// deletes claims older than the grace that no Service holds, and resyncs
// the allocator with what remains.
func (s *Server) repairServiceClaims(ctx context.Context, h *resourceHandler, c *storeClaims, backfill bool) error {
	// Claims first: a claim made after this list and a Service written
	// after the list below are both younger than the grace.
	claimKVs, _, err := c.st.List(ctx, serviceClaimsPrefix)
	if err != nil {
		return err
	}
	svcKVs, _, err := h.objects.store.List(ctx, h.objects.prefix())
	if err != nil {
		return err
	}
	claimed := make(map[string]string, len(claimKVs)) // item -> owner, as listed
	for _, kv := range claimKVs {
		claimed[strings.TrimPrefix(kv.Key, serviceClaimsPrefix)], _ = parseClaim(kv.Value)
	}
	holds := map[string]string{} // item -> owner
	backfilled := false
	for _, kv := range svcKVs {
		obj, err := h.objects.decode(kv)
		if err != nil {
			continue // reported by the cache; its holdings stay claimed
		}
		svc := obj.(*corev1.Service)
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

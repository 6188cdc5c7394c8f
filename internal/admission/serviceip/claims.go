package serviceip

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// ErrClaimed is returned by Claims.Claim when another owner holds the
// item.
var ErrClaimed = errors.New("serviceip: already claimed")

// Claims record allocations where every API server sees them: the
// store they share. Several API servers each keep their own Allocator,
// and its in-memory maps only say what this server knows; an address or
// port is handed out only once it is claimed here, so two servers never
// give the same one to two Services. Owners are "namespace/name".
type Claims interface {
	// Claim records item as held by owner. It succeeds when owner holds
	// it already, and returns ErrClaimed when another owner does.
	Claim(ctx context.Context, item, owner string) error
	// Release drops owner's claim of item; another owner's claim, or
	// none, is left alone.
	Release(ctx context.Context, item, owner string) error
}

// UseClaims makes a records its allocations in c from now on (nil:
// in-memory only, enough for a single API server). Call it before the
// allocator serves writes.
func (a *Allocator) UseClaims(c Claims) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.claims = c
}

// Resync replaces what a believes taken with held (every claim in the
// store): it learns of other servers' allocations and releases, so the
// node port range, small as it is, does not fill up with ports other
// servers freed.
func (a *Allocator) Resync(held []string) {
	ips, ports := map[netip.Addr]bool{}, map[int]bool{}
	for _, item := range held {
		if addr, port, ok := ParseItem(item); ok && port == 0 {
			ips[addr] = true
		} else if ok {
			ports[port] = true
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mu.ips, a.mu.ports = ips, ports
}

// Items names what a Service holds, as claims name it.
func Items(ips []netip.Addr, ports []int) []string {
	out := make([]string, 0, len(ips)+len(ports))
	for _, ip := range ips {
		out = append(out, ipItem(ip))
	}
	for _, p := range ports {
		out = append(out, portItem(p))
	}
	return out
}

// HeldItems names what svc holds (its addresses and node ports) as
// claims name it.
func HeldItems(svc *corev1.Service) []string { return Items(held(svc)) }

func ipItem(ip netip.Addr) string { return "ip/" + ip.String() }
func portItem(p int) string       { return "nodeport/" + strconv.Itoa(p) }

// ParseItem parses a claim item: an address (port 0) or a node port.
func ParseItem(item string) (netip.Addr, int, bool) {
	switch {
	case len(item) > 3 && item[:3] == "ip/":
		addr, err := netip.ParseAddr(item[3:])
		if err != nil {
			return netip.Addr{}, 0, false
		}
		return addr, 0, true
	case len(item) > 9 && item[:9] == "nodeport/":
		p, err := strconv.Atoi(item[9:])
		if err != nil || p <= 0 {
			return netip.Addr{}, 0, false
		}
		return netip.Addr{}, p, true
	}
	return netip.Addr{}, 0, false
}

// claimLocked claims item for owner in the shared store, if there is one.
func (a *Allocator) claimLocked(ctx context.Context, item, owner string) error {
	if a.mu.claims == nil {
		return nil
	}
	if err := a.mu.claims.Claim(ctx, item, owner); err != nil {
		if errors.Is(err, ErrClaimed) {
			return err
		}
		return fmt.Errorf("claiming %s: %w", item, err)
	}
	return nil
}

// releaseClaimsLocked drops owner's claims of ips and ports, except
// those in keep. A failure leaves a claim no Service holds, which the
// API server's repair loop removes.
func (a *Allocator) releaseClaimsLocked(ctx context.Context, owner string, ips []netip.Addr, ports []int, keep []string) {
	if a.mu.claims == nil {
		return
	}
	for _, item := range Items(ips, ports) {
		if !slices.Contains(keep, item) {
			_ = a.mu.claims.Release(context.WithoutCancel(ctx), item, owner)
		}
	}
}

// owner names svc in claims.
func owner(namespace, name string) string { return namespace + "/" + name }

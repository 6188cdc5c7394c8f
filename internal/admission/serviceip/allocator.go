package serviceip

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Allocator hands out ClusterIPs and NodePorts. Its state is derived
// from the stored Services at start (Load), so a crash cannot leak an
// allocation. With several API servers, each allocation is also claimed
// in the store they share (UseClaims, claims.go) before it is handed
// out, so two servers never give one address or port to two Services.
type Allocator struct {
	prefix   netip.Prefix
	size     int64 // usable addresses (network and broadcast excluded)
	portLow  int
	portHigh int
	mu       struct {
		sync.Mutex
		ips   map[netip.Addr]bool
		ports map[int]bool
		// claims, when set, is the store-wide record (claims.go); the
		// maps above are then this server's view of it.
		claims Claims
	}
}

// New is an allocator over the CIDR cidr (default 10.96.0.0/12, IPv4
// only) and the node ports "low-high" (default 30000-32767).
func New(cidr, portRange string) (*Allocator, error) {
	if cidr == "" {
		cidr = "10.96.0.0/12"
	}
	if portRange == "" {
		portRange = "30000-32767"
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("service cluster IP range %q: want an IPv4 CIDR", cidr)
	}
	lo, hi, ok := strings.Cut(portRange, "-")
	low, err1 := strconv.Atoi(lo)
	high, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || low < 1 || high > 65535 || low > high {
		return nil, fmt.Errorf("service node port range %q: want low-high", portRange)
	}
	a := &Allocator{prefix: p.Masked(), portLow: low, portHigh: high}
	a.size = (int64(1) << (32 - p.Bits())) - 2
	if a.size < 1 {
		return nil, fmt.Errorf("service cluster IP range %q is too small", cidr)
	}
	a.mu.ips = map[netip.Addr]bool{}
	a.mu.ports = map[int]bool{}
	return a, nil
}

// Load marks every allocation of the stored Services as taken. It is
// meant for start, before the allocator serves writes.
func (a *Allocator) Load(svcs []*corev1.Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, svc := range svcs {
		a.markLocked(svc)
	}
}

func (a *Allocator) markLocked(svc *corev1.Service) {
	for _, ip := range svc.Spec.ClusterIPs {
		if addr, err := netip.ParseAddr(ip); err == nil {
			a.mu.ips[addr] = true
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			a.mu.ports[int(p.NodePort)] = true
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		a.mu.ports[int(svc.Spec.HealthCheckNodePort)] = true
	}
}

// FirstAddress is the first usable address of the range, the one
// upstream gives the "kubernetes" Service.
func (a *Allocator) FirstAddress() netip.Addr { return a.addrAt(0) }

// addrAt is the i-th usable address of the range (0-based).
func (a *Allocator) addrAt(i int64) netip.Addr {
	base := new(big.Int).SetBytes(a.prefix.Addr().AsSlice())
	base.Add(base, big.NewInt(i+1))
	b := base.FillBytes(make([]byte, 4))
	addr, _ := netip.AddrFromSlice(b)
	return addr
}

// allocate fills in svc's ClusterIP and NodePorts. It returns a release
// function that undoes exactly what it took.
//
// With claims, the store is written while a.mu is held: Service writes
// are rare, and one lock keeps "pick a free one, claim it" simple.
func (a *Allocator) allocate(ctx context.Context, svc *corev1.Service) (func(), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ips, ports, err := a.allocateLocked(ctx, svc, nil)
	if err != nil {
		return nil, err
	}
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.freeLocked(ips, ports)
		a.releaseClaimsLocked(ctx, owner(svc.Namespace, svc.Name), ips, ports, nil)
	}, nil
}

// allocateLocked fills in and marks svc's ClusterIP and NodePorts; it
// returns what it marked. On error nothing stays marked, and no claim
// stays but those in keep (what the Service held before an update).
func (a *Allocator) allocateLocked(ctx context.Context, svc *corev1.Service, keep []string) (takenIPs []netip.Addr, takenPorts []int, err error) {
	own := owner(svc.Namespace, svc.Name)
	fail := func(err error) ([]netip.Addr, []int, error) {
		a.freeLocked(takenIPs, takenPorts)
		a.releaseClaimsLocked(ctx, own, takenIPs, takenPorts, keep)
		return nil, nil, err
	}
	unavailable := func(what string, err error) ([]netip.Addr, []int, error) {
		return fail(apierrors.NewInternalError(fmt.Errorf("failed to allocate a %s: %w", what, err)))
	}
	gk := schema.GroupKind{Kind: "Service"}
	specPath := field.NewPath("spec")
	if svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone {
		if svc.Spec.ClusterIP == "" {
			for {
				addr, ok := a.nextFreeIPLocked()
				if !ok {
					return fail(apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full")))
				}
				a.mu.ips[addr] = true // taken, by us or (ErrClaimed) another server
				if err := a.claimLocked(ctx, ipItem(addr), own); errors.Is(err, ErrClaimed) {
					continue
				} else if err != nil {
					delete(a.mu.ips, addr)
					return unavailable("serviceIP", err)
				}
				takenIPs = append(takenIPs, addr)
				svc.Spec.ClusterIP = addr.String()
				break
			}
		} else {
			addr, err := netip.ParseAddr(svc.Spec.ClusterIP)
			if err != nil || !a.prefix.Contains(addr) {
				return fail(apierrors.NewInvalid(gk, svc.Name, field.ErrorList{field.Invalid(specPath.Child("clusterIPs").Index(0), svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", svc.Spec.ClusterIP, svc.Spec.ClusterIP, a.prefix))}))
			}
			ipTaken := func() ([]netip.Addr, []int, error) {
				return fail(apierrors.NewInvalid(gk, svc.Name, field.ErrorList{field.Invalid(specPath.Child("clusterIPs").Index(0), svc.Spec.ClusterIP, fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", svc.Spec.ClusterIP))}))
			}
			// With claims, the store is the authority: this server's map
			// may still hold an address another server has since freed.
			if a.mu.ips[addr] && a.mu.claims == nil {
				return ipTaken()
			}
			if err := a.claimLocked(ctx, ipItem(addr), own); errors.Is(err, ErrClaimed) {
				a.mu.ips[addr] = true
				return ipTaken()
			} else if err != nil {
				return unavailable("serviceIP", err)
			}
			a.mu.ips[addr] = true
			takenIPs = append(takenIPs, addr)
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		single := corev1.IPFamilyPolicySingleStack
		if svc.Spec.IPFamilyPolicy == nil {
			svc.Spec.IPFamilyPolicy = &single
		}
	} else if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		svc.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
	}
	if needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if err := a.portLocked(ctx, &p.NodePort, own, gk, svc.Name, specPath.Child("ports").Index(i).Child("nodePort"), "nodePort"); err != nil {
				return fail(err)
			}
			takenPorts = append(takenPorts, int(p.NodePort))
		}
	}
	if NeedsHealthCheck(svc) {
		if err := a.portLocked(ctx, &svc.Spec.HealthCheckNodePort, own, gk, svc.Name, specPath.Child("healthCheckNodePort"), "HealthCheck NodePort"); err != nil {
			return fail(err)
		}
		takenPorts = append(takenPorts, int(svc.Spec.HealthCheckNodePort))
	}
	return takenIPs, takenPorts, nil
}

// portLocked takes *port for own, a free one when it is 0, and marks it.
// On error nothing is marked or claimed.
func (a *Allocator) portLocked(ctx context.Context, port *int32, own string, gk schema.GroupKind, name string, path *field.Path, what string) error {
	invalid := func(msg string) error {
		return apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(path, *port, msg)})
	}
	unavailable := func(err error) error {
		return apierrors.NewInternalError(fmt.Errorf("failed to allocate a %s: %w", what, err))
	}
	if *port == 0 {
		for {
			p, ok := a.nextFreePortLocked()
			if !ok {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a %s: range is full", what))
			}
			a.mu.ports[p] = true // taken, by us or (ErrClaimed) another server
			if err := a.claimLocked(ctx, portItem(p), own); errors.Is(err, ErrClaimed) {
				continue
			} else if err != nil {
				delete(a.mu.ports, p)
				return unavailable(err)
			}
			*port = int32(p)
			return nil
		}
	}
	p := int(*port)
	switch {
	case p < a.portLow || p > a.portHigh:
		return invalid(fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %d-%d", a.portLow, a.portHigh))
	case a.mu.ports[p] && a.mu.claims == nil:
		return invalid("provided port is already allocated")
	}
	if err := a.claimLocked(ctx, portItem(p), own); errors.Is(err, ErrClaimed) {
		a.mu.ports[p] = true
		return invalid("provided port is already allocated")
	} else if err != nil {
		return unavailable(err)
	}
	a.mu.ports[p] = true
	return nil
}

// NeedsHealthCheck is upstream's rule: a LoadBalancer Service with
// externalTrafficPolicy Local gets a health check node port, which
// load balancers probe to find the nodes with local endpoints.
func NeedsHealthCheck(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

func needsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// nextFreeIPLocked starts at a random offset so concurrent allocations
// rarely contend and freed addresses are not reused at once.
func (a *Allocator) nextFreeIPLocked() (netip.Addr, bool) {
	start := rand.Int64N(a.size)
	for i := int64(0); i < a.size; i++ {
		addr := a.addrAt((start + i) % a.size)
		if !a.mu.ips[addr] {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

func (a *Allocator) nextFreePortLocked() (int, bool) {
	n := a.portHigh - a.portLow + 1
	start := rand.IntN(n)
	for i := 0; i < n; i++ {
		p := a.portLow + (start+i)%n
		if !a.mu.ports[p] {
			return p, true
		}
	}
	return 0, false
}

// freeLocked unmarks addresses and ports.
func (a *Allocator) freeLocked(ips []netip.Addr, ports []int) {
	for _, ip := range ips {
		delete(a.mu.ips, ip)
	}
	for _, p := range ports {
		delete(a.mu.ports, p)
	}
}

// held lists the addresses and node ports svc holds.
func held(svc *corev1.Service) (ips []netip.Addr, ports []int) {
	for _, ip := range svc.Spec.ClusterIPs {
		if addr, err := netip.ParseAddr(ip); err == nil {
			ips = append(ips, addr)
		}
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 {
			ports = append(ports, int(p.NodePort))
		}
	}
	if svc.Spec.HealthCheckNodePort != 0 {
		ports = append(ports, int(svc.Spec.HealthCheckNodePort))
	}
	return ips, ports
}

// releaseService frees everything a deleted Service held.
func (a *Allocator) releaseService(ctx context.Context, svc *corev1.Service) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ips, ports := held(svc)
	a.freeLocked(ips, ports)
	a.releaseClaimsLocked(ctx, owner(svc.Namespace, svc.Name), ips, ports, nil)
}

// reallocate allocates what an update of old to svc newly needs (node
// ports on a change to NodePort, an address on a change from ExternalName)
// and drops node ports a ClusterIP service may not keep. Nothing old held
// is freed yet: finish(true), once the update is stored, frees what svc no
// longer holds; finish(false) (dry run, failed or no-op write) frees what
// svc newly took. finish must be called exactly once.
func (a *Allocator) reallocate(ctx context.Context, svc, old *corev1.Service) (finish func(written bool), err error) {
	if !needsNodePorts(svc) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if !NeedsHealthCheck(svc) {
		svc.Spec.HealthCheckNodePort = 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	oldIPs, oldPorts := held(old)
	// Allocate as if old's holdings were free, so svc may keep them
	// (their claims are the Service's own, which Claim accepts).
	a.freeLocked(oldIPs, oldPorts)
	_, _, err = a.allocateLocked(ctx, svc, Items(oldIPs, oldPorts))
	for _, ip := range oldIPs {
		a.mu.ips[ip] = true
	}
	for _, p := range oldPorts {
		a.mu.ports[p] = true
	}
	if err != nil {
		return nil, err
	}
	newIPs, newPorts := held(svc)
	own := owner(svc.Namespace, svc.Name)
	return func(written bool) {
		a.mu.Lock()
		defer a.mu.Unlock()
		ips, ports := minus(newIPs, oldIPs), minus(newPorts, oldPorts)
		if written {
			ips, ports = minus(oldIPs, newIPs), minus(oldPorts, newPorts)
		}
		a.freeLocked(ips, ports)
		a.releaseClaimsLocked(ctx, own, ips, ports, nil)
	}, nil
}

// minus is the elements of a not in b.
func minus[T comparable](a, b []T) []T {
	var out []T
	for _, x := range a {
		found := false
		for _, y := range b {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}

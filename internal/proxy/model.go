package proxy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Family is an IP family the proxy programs.
type Family uint8

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) String() string {
	if f == IPv6 {
		return "ip6"
	}
	return "ip"
}

// FamilyOf returns the family of a.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() || a.Is4In6() {
		return IPv4
	}
	return IPv6
}

// ServicePortName identifies one port of one Service.
type ServicePortName struct {
	types.NamespacedName
	Port     string
	Protocol v1.Protocol
}

func (n ServicePortName) String() string {
	return fmt.Sprintf("%s/%s/%s/%s", n.Namespace, n.Name, strings.ToLower(string(n.Protocol)), n.Port)
}

// ServicePort is what the proxy programs for one port of a Service in one
// IP family. It is immutable once built.
type ServicePort struct {
	Name      ServicePortName
	Family    Family
	ClusterIP netip.Addr // invalid for none in this family
	Port      uint16
	NodePort  uint16
	// ExternalIPs holds spec.externalIPs and the load balancer's ingress IPs
	// (those not in ipMode Proxy): both are reached from outside the node
	// and follow externalTrafficPolicy.
	ExternalIPs []netip.Addr
	// FirewallIPs are the load balancer ingress IPs (of ExternalIPs) that
	// only SourceRanges may reach (spec.loadBalancerSourceRanges of this
	// family); both are empty when the Service sets no ranges, or one
	// that is all addresses.
	FirewallIPs         []netip.Addr
	SourceRanges        []netip.Prefix
	ExternalPolicyLocal bool
	InternalPolicyLocal bool
	// AffinityTimeout is the ClientIP affinity's timeout; 0 means no affinity.
	AffinityTimeout time.Duration
	// Created orders conflicting ports (the older one wins a NodePort).
	Created time.Time
}

// UsesClusterEndpoints says whether some traffic to the port goes to
// cluster-wide endpoints.
func (p *ServicePort) UsesClusterEndpoints() bool {
	return !p.InternalPolicyLocal || (p.hasExternal() && !p.ExternalPolicyLocal)
}

// UsesLocalEndpoints says whether some traffic to the port goes to node-local
// endpoints only.
func (p *ServicePort) UsesLocalEndpoints() bool {
	return p.InternalPolicyLocal || (p.hasExternal() && p.ExternalPolicyLocal)
}

func (p *ServicePort) hasExternal() bool { return p.NodePort != 0 || len(p.ExternalIPs) > 0 }

// Endpoint is one backend address of a ServicePort.
type Endpoint struct {
	Addr                        netip.Addr
	Port                        uint16
	Ready, Serving, Terminating bool
	Local                       bool
	// Hints are the endpoint's topology hints; nil for none (most
	// endpoints: the struct stays small, and copying it is much of a
	// large Service's sync).
	Hints *Hints
}

// Hints are an endpoint's topology hints: the zones and nodes it is for.
type Hints struct {
	Zones, Nodes []string
}

// ZoneHints returns the zones the endpoint is hinted for.
func (e *Endpoint) ZoneHints() []string {
	if e.Hints == nil {
		return nil
	}
	return e.Hints.Zones
}

// NodeHints returns the nodes the endpoint is hinted for.
func (e *Endpoint) NodeHints() []string {
	if e.Hints == nil {
		return nil
	}
	return e.Hints.Nodes
}

func (e Endpoint) String() string { return netip.AddrPortFrom(e.Addr, e.Port).String() }

// PortView is a ServicePort with the endpoints each kind of traffic uses,
// as upstream's CategorizeEndpoints decides them.
type PortView struct {
	ServicePort
	// Cluster serves traffic under the Cluster policies, Local under Local;
	// both are sorted by address and port, and read-only (they may share
	// one array).
	Cluster, Local []Endpoint
	// HasAny says whether any usable endpoint exists anywhere (else the
	// port rejects rather than drops).
	HasAny bool
}

// ServiceView is every PortView of one Service (all families). A nil
// *ServiceView in a change set means the Service is gone.
type ServiceView struct {
	Name  types.NamespacedName
	Ports []PortView
	// HealthCheckNodePort is where the proxy answers a load balancer's
	// health checks for a LoadBalancer Service with externalTrafficPolicy
	// Local (0: none); LocalReady counts the node's ready endpoint
	// addresses, the health check's answer.
	HealthCheckNodePort uint16
	LocalReady          int
	// Skipped lists ports the proxy will not program and why.
	Skipped []string
}

// buildPorts turns a Service into its ServicePorts, one per port per family
// the proxy serves, and says why it skips any (ports out of range: the API
// server validates them, but the proxy does not trust that). It returns no
// ports for Services the proxy ignores (ExternalName, headless).
func buildPorts(svc *v1.Service, families []Family) (ports []ServicePort, skipped []string) {
	if svc.Spec.Type == v1.ServiceTypeExternalName || svc.Spec.ClusterIP == v1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		return nil, nil
	}
	clusterIPs := svc.Spec.ClusterIPs
	if len(clusterIPs) == 0 {
		clusterIPs = []string{svc.Spec.ClusterIP}
	}
	var ext, lbIPs []netip.Addr
	for _, s := range svc.Spec.ExternalIPs {
		if a, err := netip.ParseAddr(s); err == nil {
			ext = append(ext, a.Unmap())
		}
	}
	if svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IPMode != nil && *ing.IPMode == v1.LoadBalancerIPModeProxy {
				continue // the load balancer proxies: the node never sees its IP
			}
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				ext = append(ext, a.Unmap())
				lbIPs = append(lbIPs, a.Unmap())
			}
		}
	}
	ranges := sourceRanges(svc.Spec.LoadBalancerSourceRanges)
	var timeout time.Duration
	if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
		timeout = time.Duration(v1.DefaultClientIPServiceAffinitySeconds) * time.Second
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
			timeout = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	externalLocal := svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal &&
		(svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer || len(svc.Spec.ExternalIPs) > 0)
	internalLocal := svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == v1.ServiceInternalTrafficPolicyLocal
	var out []ServicePort
	for _, p := range svc.Spec.Ports {
		if p.Port < 1 || p.Port > 65535 || p.NodePort < 0 || p.NodePort > 65535 {
			skipped = append(skipped, fmt.Sprintf("%s/%s port %q: port %d or nodePort %d out of range", svc.Namespace, svc.Name, p.Name, p.Port, p.NodePort))
		}
	}
	for _, fam := range families {
		var cip netip.Addr
		for _, s := range clusterIPs {
			if a, err := netip.ParseAddr(s); err == nil && FamilyOf(a) == fam {
				cip = a.Unmap()
				break
			}
		}
		if !cip.IsValid() {
			continue // single-stack Service of the other family
		}
		var famExt, famLB []netip.Addr
		for _, a := range ext {
			if FamilyOf(a) == fam {
				famExt = append(famExt, a)
			}
		}
		famRanges := ranges[fam]
		if len(famRanges) > 0 {
			for _, a := range lbIPs {
				if FamilyOf(a) == fam {
					famLB = append(famLB, a)
				}
			}
			if len(famLB) == 0 {
				famRanges = nil
			}
		}
		for _, p := range svc.Spec.Ports {
			if p.Port < 1 || p.Port > 65535 || p.NodePort < 0 || p.NodePort > 65535 {
				continue
			}
			sp := ServicePort{
				Name:                ServicePortName{NamespacedName: types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}, Port: p.Name, Protocol: p.Protocol},
				Family:              fam,
				ClusterIP:           cip,
				Port:                uint16(p.Port),
				ExternalIPs:         famExt,
				FirewallIPs:         famLB,
				SourceRanges:        famRanges,
				ExternalPolicyLocal: externalLocal,
				InternalPolicyLocal: internalLocal,
				AffinityTimeout:     timeout,
				Created:             svc.CreationTimestamp.Time,
			}
			if svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer {
				sp.NodePort = uint16(p.NodePort)
			}
			if sp.Name.Protocol == "" {
				sp.Name.Protocol = v1.ProtocolTCP
			}
			out = append(out, sp)
		}
	}
	return out, skipped
}

// sourceRanges parses spec.loadBalancerSourceRanges by family, as upstream
// does: surrounding spaces are trimmed (validation lets them through),
// unparsable ranges are ignored, and a family with a range covering every
// address has none (no filtering).
func sourceRanges(specs []string) map[Family][]netip.Prefix {
	if len(specs) == 0 {
		return nil // most Services: no allocation on the sync path
	}
	out := map[Family][]netip.Prefix{}
	all := map[Family]bool{}
	for _, s := range specs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil || p.Addr().Is4In6() || p.Addr().Zone() != "" {
			continue
		}
		p = p.Masked()
		fam := FamilyOf(p.Addr())
		if p.Bits() == 0 {
			all[fam] = true
		}
		out[fam] = append(out[fam], p)
	}
	for fam := range all {
		delete(out, fam)
	}
	return out
}

// endpointsFor collects the endpoints of one ServicePort from the Service's
// EndpointSlices, sorted by address and port and deduplicated by them (a
// ready copy wins, as in upstream's endpointSliceCache).
func endpointsFor(sp *ServicePort, sl []*discovery.EndpointSlice, nodeName string) []Endpoint {
	n := 0
	for _, s := range sl {
		n += len(s.Endpoints)
	}
	out := make([]Endpoint, 0, n)
	for _, s := range sl {
		if (s.AddressType == discovery.AddressTypeIPv4) != (sp.Family == IPv4) || s.AddressType == discovery.AddressTypeFQDN {
			continue
		}
		var port uint16
		found := false
		for _, p := range s.Ports {
			name, proto := "", v1.ProtocolTCP
			if p.Name != nil {
				name = *p.Name
			}
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			if name == sp.Name.Port && proto == sp.Name.Protocol && p.Port != nil {
				port, found = uint16(*p.Port), true
				break
			}
		}
		if !found || port == 0 {
			continue
		}
		for i := range s.Endpoints {
			e := &s.Endpoints[i]
			if len(e.Addresses) == 0 {
				continue
			}
			a, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || FamilyOf(a) != sp.Family {
				continue
			}
			ep := Endpoint{Addr: a.Unmap(), Port: port}
			ep.Ready = e.Conditions.Ready == nil || *e.Conditions.Ready
			ep.Serving = ep.Ready
			if e.Conditions.Serving != nil {
				ep.Serving = *e.Conditions.Serving
			}
			ep.Terminating = e.Conditions.Terminating != nil && *e.Conditions.Terminating
			ep.Local = e.NodeName != nil && *e.NodeName == nodeName
			if h := e.Hints; h != nil && len(h.ForZones)+len(h.ForNodes) > 0 {
				ep.Hints = &Hints{}
				for _, z := range h.ForZones {
					ep.Hints.Zones = append(ep.Hints.Zones, z.Name)
				}
				for _, n := range h.ForNodes {
					ep.Hints.Nodes = append(ep.Hints.Nodes, n.Name)
				}
			}
			out = append(out, ep)
		}
	}
	if len(out) == 0 {
		return nil
	}
	// A stable order makes the computed rules deterministic and puts
	// copies side by side. Moving these structs is what sorting them
	// costs, so their positions are sorted and each moved once.
	if slices.IsSortedFunc(out, strictlyAfter) {
		return out // already in order, and no copies
	}
	order := make([]int32, len(out))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return compareEndpoints(&out[a], &out[b]) })
	kept := make([]Endpoint, 0, len(out))
	for _, i := range order {
		ep := &out[i]
		if len(kept) == 0 || compareEndpoints(&kept[len(kept)-1], ep) != 0 {
			kept = append(kept, *ep)
		} else if last := &kept[len(kept)-1]; !last.Ready && ep.Ready {
			*last = *ep
		}
	}
	return kept
}

// strictlyAfter, as slices.IsSortedFunc's cmp(later, earlier), accepts
// only an increasing pair: two copies of an endpoint are out of order.
func strictlyAfter(later, earlier Endpoint) int {
	if compareEndpoints(&later, &earlier) > 0 {
		return 1
	}
	return -1
}

// compareEndpoints orders endpoints by address, then port.
func compareEndpoints(a, b *Endpoint) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	return int(a.Port) - int(b.Port)
}

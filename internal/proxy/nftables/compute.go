package nftables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

func protoNum(p v1.Protocol) uint8 {
	switch p {
	case v1.ProtocolUDP:
		return protoUDP
	case v1.ProtocolSCTP:
		return protoSCTP
	}
	return protoTCP
}

// portID names a service port's chains: readable in `nft list`, unique
// per table (namespace and name cannot contain '/').
func portID(n proxy.ServicePortName) string {
	return n.Namespace + "/" + n.Name + "/" + strings.ToLower(string(n.Protocol)) + "/" + n.Port
}

// lbChain names the shared chain that picks one of n endpoints of the
// entry point a packet arrived at (its destination address and port, or
// its node port), remembering the pick for affinity if set.
func lbChain(nodePort, localOrigin bool, n int, affinity string) string {
	kind := "addr"
	if nodePort {
		kind = "nodeport"
	}
	if localOrigin {
		kind = "local-origin-" + kind
	}
	if affinity == "" {
		return fmt.Sprintf("lb-%s-%d", kind, n)
	}
	return fmt.Sprintf("lb-%s-%d-affinity-%s", kind, n, affinity)
}

// masqueradePolicy is which traffic to a cluster IP is masqueraded.
type masqueradePolicy struct {
	// all: every packet (upstream's --masquerade-all); else, with
	// clusterCIDR set, those from outside it (upstream's local-traffic
	// detection by cluster CIDR); else none.
	all         bool
	clusterCIDR netip.Prefix
}

// computeFragment builds what one Service's ports (of one family) program.
// prev, the fragment currently programmed (nil if none), keeps endpoints in
// the slots they already have, so an endpoint replaced in place rewrites
// one element per entry point (cluster IP, external IP, node port).
func computeFragment(prev *fragment, ports []proxy.PortView, masq masqueradePolicy) *fragment {
	f := newFragment(prev)
	for i := range ports {
		pv := &ports[i]
		f.ports++
		id := portID(pv.Name)
		proto := protoNum(pv.Name.Protocol)
		if len(pv.FirewallIPs) > 0 && len(pv.SourceRanges) > 0 {
			// loadBalancerSourceRanges: new connections to the load
			// balancer IPs from elsewhere are dropped before DNAT, whether
			// or not the port has endpoints. (Node ports are not subject
			// to the ranges, as upstream's are not.)
			fw := "firewall-" + id
			for _, c := range pv.SourceRanges {
				f.chains[fw] = append(f.chains[fw], rule{kind: rReturnFromSource, cidr: c})
			}
			f.chains[fw] = append(f.chains[fw], rule{kind: rDrop})
			for _, a := range pv.FirewallIPs {
				f.elems[elemRef{mapFirewallIPs, elemKey{addr: a, proto: proto, port: pv.Port}}] = elemVal{verdict: "goto " + fw}
			}
		}
		if !pv.HasAny {
			// No endpoint anywhere: the filter chains reject new connections.
			reject := elemVal{verdict: "goto " + chainReject}
			f.elems[elemRef{mapNoEndpointServices, elemKey{addr: pv.ClusterIP, proto: proto, port: pv.Port}}] = reject
			for _, a := range pv.ExternalIPs {
				f.elems[elemRef{mapNoEndpointServices, elemKey{addr: a, proto: proto, port: pv.Port}}] = reject
			}
			if pv.NodePort != 0 {
				f.elems[elemRef{mapNoEndpointNodePorts, elemKey{proto: proto, port: pv.NodePort}}] = reject
			}
			continue
		}
		var affinity string
		if pv.AffinityTimeout > 0 {
			affinity = fmt.Sprintf("%ds", int64(pv.AffinityTimeout.Seconds()))
		}

		// lb adds the elements for eps at the entry point keys and returns
		// the shared chain choosing among them. localOrigin selects the maps
		// for the node's own traffic to a Local-policy port's external
		// entry points, which goes to any endpoint, as upstream's does.
		lb := func(use string, nodePort, localOrigin bool, eps []proxy.Endpoint, keys ...elemKey) string {
			order := id + " " + use
			slots := assignSlots(prev, order, eps)
			f.slots[order] = slots
			m := mapEndpoints
			switch {
			case nodePort && localOrigin:
				m = mapLocalOriginNodePortEndpoints
			case nodePort:
				m = mapNodePortEndpoints
			case localOrigin:
				m = mapLocalOriginEndpoints
			}
			f.addGroup(m, keys, slots)
			name := lbChain(nodePort, localOrigin, len(eps), affinity)
			f.lbs[name] = lbDef{nodePort: nodePort, localOrigin: localOrigin, n: uint32(len(eps)), affinity: pv.AffinityTimeout}
			return name
		}
		// pick ends chain with the jump to the shared chain choosing among
		// eps, or with a drop when there are none.
		pick := func(chain, use string, nodePort bool, eps []proxy.Endpoint, keys ...elemKey) {
			if len(eps) == 0 {
				f.chains[chain] = append(f.chains[chain], rule{kind: rDrop})
				return
			}
			f.chains[chain] = append(f.chains[chain], rule{kind: rGoto, target: lb(use, nodePort, false, eps, keys...)})
		}
		// localOrigin starts a Local-policy external chain with the node's
		// own traffic going, masqueraded, to any endpoint.
		localOrigin := func(chain string, nodePort bool, keys ...elemKey) {
			if !pv.ExternalPolicyLocal || !pv.UsesClusterEndpoints() || len(pv.Cluster) == 0 {
				return
			}
			f.chains[chain] = append(f.chains[chain],
				rule{kind: rLocalSourceJump, target: chainMarkForMasq},
				rule{kind: rLocalSourceGoto, target: lb("cluster", nodePort, true, pv.Cluster, keys...)})
		}
		internal, internalUse := pv.Cluster, "cluster"
		if pv.InternalPolicyLocal {
			internal, internalUse = pv.Local, "local"
		}
		external, externalUse := pv.Cluster, "cluster"
		if pv.ExternalPolicyLocal {
			external, externalUse = pv.Local, "local"
		}

		// Internal traffic (to the cluster IP).
		svcChain := "svc-" + id
		f.chains[svcChain] = nil
		switch {
		case masq.all:
			f.chains[svcChain] = append(f.chains[svcChain], rule{kind: rJump, target: chainMarkForMasq})
		case masq.clusterCIDR.IsValid():
			f.chains[svcChain] = append(f.chains[svcChain], rule{kind: rMasqOutsideCIDR, cidr: masq.clusterCIDR})
		}
		pick(svcChain, internalUse, false, internal, elemKey{addr: pv.ClusterIP, proto: proto, port: pv.Port})
		f.elems[elemRef{mapServiceIPs, elemKey{addr: pv.ClusterIP, proto: proto, port: pv.Port}}] = elemVal{verdict: "goto " + svcChain}

		// External traffic: external and load balancer IPs, node ports.
		// Under the Cluster policy it is masqueraded (its reply must come
		// back through this node); Local keeps the client's address.
		var masq []rule
		if !pv.ExternalPolicyLocal {
			masq = []rule{{kind: rJump, target: chainMarkForMasq}}
		}
		if len(pv.ExternalIPs) > 0 {
			extChain := "ext-" + id
			f.chains[extChain] = append([]rule(nil), masq...)
			var keys []elemKey
			for _, a := range pv.ExternalIPs {
				keys = append(keys, elemKey{addr: a, proto: proto, port: pv.Port})
				f.elems[elemRef{mapServiceIPs, elemKey{addr: a, proto: proto, port: pv.Port}}] = elemVal{verdict: "goto " + extChain}
			}
			localOrigin(extChain, false, keys...)
			pick(extChain, externalUse, false, external, keys...)
		}
		if pv.NodePort != 0 {
			npChain := "nodeport-" + id
			f.chains[npChain] = append([]rule(nil), masq...)
			localOrigin(npChain, true, elemKey{proto: proto, port: pv.NodePort})
			pick(npChain, externalUse, true, external, elemKey{proto: proto, port: pv.NodePort})
			f.elems[elemRef{mapServiceNodePorts, elemKey{proto: proto, port: pv.NodePort}}] = elemVal{verdict: "goto " + npChain}
		}
	}
	return f
}

// assignSlots orders eps (sorted by address and port, as a PortView's
// are) into slots 0..len-1, keeping each endpoint that already had a slot
// below len in prev's ordering of the same name, and filling the rest in
// order.
func assignSlots(prev *fragment, order string, eps []proxy.Endpoint) []netip.AddrPort {
	n := len(eps)
	out := make([]netip.AddrPort, n)
	var before []netip.AddrPort
	if prev != nil {
		before = prev.slots[order]
	}
	// placed[i]: eps[i] has its slot. A binary search, not a map: hashing
	// each endpoint was most of a large Service's sync.
	placed := make([]bool, n)
	guess := 0 // slots mostly stay in order: try the endpoint after the last one found
	for slot := 0; slot < n && slot < len(before); slot++ {
		ap := before[slot]
		i, found := guess, guess < n && eps[guess].Addr == ap.Addr() && eps[guess].Port == ap.Port()
		if !found {
			i, found = slices.BinarySearchFunc(eps, ap, func(e proxy.Endpoint, ap netip.AddrPort) int {
				if c := e.Addr.Compare(ap.Addr()); c != 0 {
					return c
				}
				return int(e.Port) - int(ap.Port())
			})
		}
		if found && !placed[i] {
			out[slot], placed[i] = ap, true
			guess = i + 1
		}
	}
	next := 0
	for i, ep := range eps {
		if placed[i] {
			continue
		}
		for out[next].IsValid() {
			next++
		}
		out[next] = netip.AddrPortFrom(ep.Addr, ep.Port)
	}
	if slices.Equal(out, before) {
		return before // fragments are immutable: share the unchanged order
	}
	return out
}

package nftables

import (
	"net/netip"
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

// portID names a service port's chains and maps: readable in `nft list`,
// unique per table (namespace and name cannot contain '/').
func portID(n proxy.ServicePortName) string {
	return n.Namespace + "/" + n.Name + "/" + strings.ToLower(string(n.Protocol)) + "/" + n.Port
}

// computeFragment builds what one Service's ports (of one family) program.
// prev, the fragment currently programmed (nil if none), keeps endpoints in
// the slots they already have, so an endpoint change rewrites only the
// slots that changed.
// alloc hands out endpoint set ids never used before in the table.
func computeFragment(prev *fragment, ports []proxy.PortView, clusterCIDR netip.Prefix, alloc func() uint32) *fragment {
	f := newFragment()
	for i := range ports {
		pv := &ports[i]
		f.ports++
		id := portID(pv.Name)
		proto := protoNum(pv.Name.Protocol)
		hasExternal := pv.NodePort != 0 || len(pv.ExternalIPs) > 0
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
		svcChain, extChain := "svc-"+id, "ext-"+id
		affinity := pv.AffinityTimeout > 0

		// dnat adds the rules and elements that pick one of eps; use names
		// the endpoint set ("clu-<port>" or "loc-<port>").
		dnat := func(chain, use string, eps []proxy.Endpoint) {
			if len(eps) == 0 {
				f.chains[chain] = append(f.chains[chain], rule{kind: rDrop})
				return
			}
			id, ok := f.ids[use]
			if !ok {
				if prev != nil {
					id, ok = prev.ids[use]
				}
				if !ok {
					id = alloc()
				}
				f.ids[use] = id
			}
			for slot, ep := range assignSlots(prev, id, eps) {
				f.elems[elemRef{mapEndpoints, elemKey{id: id, slot: uint32(slot)}}] = elemVal{addr: ep.Addr, port: ep.Port}
				f.elems[elemRef{setHairpin, elemKey{addr: ep.Addr, addr2: ep.Addr}}] = elemVal{}
			}
			if !affinity {
				f.chains[chain] = append(f.chains[chain], rule{kind: rDNAT, id: id, n: uint32(len(eps))})
				return
			}
			f.chains[chain] = append(f.chains[chain],
				rule{kind: rDNATAffinity, id: id, affinity: pv.AffinityTimeout},
				rule{kind: rDNAT, id: id, n: uint32(len(eps)), affinity: pv.AffinityTimeout})
		}

		// Internal traffic (to the cluster IP).
		f.chains[svcChain] = nil
		if clusterCIDR.IsValid() {
			f.chains[svcChain] = append(f.chains[svcChain], rule{kind: rMasqOutsideCIDR, cidr: clusterCIDR})
		}
		if pv.InternalPolicyLocal {
			dnat(svcChain, "loc-"+id, pv.Local)
		} else {
			dnat(svcChain, "clu-"+id, pv.Cluster)
		}
		f.elems[elemRef{mapServiceIPs, elemKey{addr: pv.ClusterIP, proto: proto, port: pv.Port}}] = elemVal{verdict: "goto " + svcChain}

		if !hasExternal {
			continue
		}
		// External traffic (node ports, external and load balancer IPs).
		if pv.ExternalPolicyLocal {
			// The node's own traffic has no client IP to preserve: it goes
			// to any endpoint, masqueraded, as upstream does.
			f.chains[extChain] = []rule{
				{kind: rLocalSourceJump, target: chainMarkForMasq},
				{kind: rLocalSourceGoto, target: svcChain},
			}
			dnat(extChain, "loc-"+id, pv.Local)
		} else {
			f.chains[extChain] = []rule{{kind: rJump, target: chainMarkForMasq}}
			dnat(extChain, "clu-"+id, pv.Cluster)
		}
		for _, a := range pv.ExternalIPs {
			f.elems[elemRef{mapServiceIPs, elemKey{addr: a, proto: proto, port: pv.Port}}] = elemVal{verdict: "goto " + extChain}
		}
		if pv.NodePort != 0 {
			f.elems[elemRef{mapServiceNodePorts, elemKey{proto: proto, port: pv.NodePort}}] = elemVal{verdict: "goto " + extChain}
		}
	}
	return f
}

// assignSlots orders eps into slots 0..len-1, keeping each endpoint that
// already had a slot below len in it and filling the rest in order.
func assignSlots(prev *fragment, id uint32, eps []proxy.Endpoint) []proxy.Endpoint {
	n := len(eps)
	out := make([]proxy.Endpoint, n)
	if prev == nil {
		copy(out, eps)
		return out
	}
	filled := make([]bool, n)
	placed := make(map[netip.AddrPort]bool, n)
	want := make(map[netip.AddrPort]int, n)
	for i, ep := range eps {
		want[netip.AddrPortFrom(ep.Addr, ep.Port)] = i
	}
	for slot := 0; slot < n; slot++ {
		v, ok := prev.elems[elemRef{mapEndpoints, elemKey{id: id, slot: uint32(slot)}}]
		if !ok {
			continue
		}
		ap := netip.AddrPortFrom(v.addr, v.port)
		if i, ok := want[ap]; ok && !placed[ap] {
			out[slot], filled[slot], placed[ap] = eps[i], true, true
		}
	}
	next := 0
	for _, ep := range eps {
		if placed[netip.AddrPortFrom(ep.Addr, ep.Port)] {
			continue
		}
		for filled[next] {
			next++
		}
		out[next], filled[next] = ep, true
	}
	return out
}

package nftables

import (
	"fmt"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// staleFlow is a UDP conntrack entry that outlived its endpoint: UDP has no
// connection to close, so without deleting the entry a client that keeps
// its socket keeps sending to the removed endpoint (upstream's
// pkg/proxy/conntrack cleanup does the same).
type staleFlow struct {
	fam      proxy.Family
	entry    netip.Addr // service address; invalid for a node port
	port     uint16     // service port or node port
	endpoint netip.Addr
}

// staleUDPFlows lists the UDP endpoints a plan removes from an entry point
// (not merely moved to another slot of it).
func staleUDPFlows(fam proxy.Family, p *plan) []staleFlow {
	type entryEP struct {
		entry netip.Addr
		port  uint16
		ep    netip.AddrPort
	}
	kept := map[entryEP]bool{}
	for _, op := range p.elemAdd {
		if isEndpointMap(op.ref.m) && op.ref.key.proto == protoUDP {
			kept[entryEP{op.ref.key.addr, op.ref.key.port, netip.AddrPortFrom(op.val.addr, op.val.port)}] = true
		}
	}
	seen := map[entryEP]bool{}
	var out []staleFlow
	for _, op := range p.elemDel {
		if !isEndpointMap(op.ref.m) || op.ref.key.proto != protoUDP {
			continue
		}
		k := entryEP{op.ref.key.addr, op.ref.key.port, netip.AddrPortFrom(op.val.addr, op.val.port)}
		if kept[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, staleFlow{fam: fam, entry: k.entry, port: k.port, endpoint: op.val.addr})
	}
	return out
}

func isEndpointMap(m string) bool {
	switch m {
	case mapEndpoints, mapNodePortEndpoints, mapLocalOriginEndpoints, mapLocalOriginNodePortEndpoints:
		return true
	}
	return false
}

// conntrack deletes conntrack entries in the proxy's network namespace.
type conntrack struct {
	h *netlink.Handle
}

func newConntrack(netnsFd int) (*conntrack, error) {
	var h *netlink.Handle
	var err error
	if netnsFd != 0 {
		h, err = netlink.NewHandleAt(netns.NsHandle(netnsFd), unix.NETLINK_NETFILTER)
	} else {
		h, err = netlink.NewHandle(unix.NETLINK_NETFILTER)
	}
	if err != nil {
		return nil, fmt.Errorf("opening conntrack netlink socket: %w", err)
	}
	return &conntrack{h: h}, nil
}

// delete removes the flows' entries: original destination the entry point,
// reply source the removed endpoint.
func (c *conntrack) delete(flows []staleFlow) error {
	byFam := map[proxy.Family][]netlink.CustomConntrackFilter{}
	for _, f := range flows {
		cf := &netlink.ConntrackFilter{}
		if err := cf.AddProtocol(protoUDP); err != nil {
			return err
		}
		if f.entry.IsValid() {
			if err := cf.AddIP(netlink.ConntrackOrigDstIP, f.entry.AsSlice()); err != nil {
				return err
			}
		}
		if err := cf.AddPort(netlink.ConntrackOrigDstPort, f.port); err != nil {
			return err
		}
		if err := cf.AddIP(netlink.ConntrackReplySrcIP, f.endpoint.AsSlice()); err != nil {
			return err
		}
		byFam[f.fam] = append(byFam[f.fam], cf)
	}
	for fam, filters := range byFam {
		family := netlink.InetFamily(unix.AF_INET)
		if fam == proxy.IPv6 {
			family = unix.AF_INET6
		}
		if _, err := c.h.ConntrackDeleteFilters(netlink.ConntrackTable, family, filters...); err != nil {
			return fmt.Errorf("deleting %d stale UDP conntrack entries: %w", len(filters), err)
		}
	}
	return nil
}

func (c *conntrack) close() { c.h.Close() }

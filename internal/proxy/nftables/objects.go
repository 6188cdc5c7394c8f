package nftables

import (
	"fmt"
	"iter"
	"net/netip"
	"slices"
	"time"
)

// TableName is the nf_tables table the proxy owns in each family.
const TableName = "myriad-proxy"

// masqueradeBit is the packet mark bit asking for masquerade (upstream's 0x4000).
const masqueradeBit = 0x4000

type ruleKind uint8

const (
	rJump                ruleKind = iota // jump Target
	rGoto                                // goto Target
	rServiceIPs                          // daddr . l4proto . dport vmap @service-ips
	rServiceNodePorts                    // fib daddr local, l4proto . dport vmap @service-nodeports
	rNewConnCheck                        // ct state new jump Target
	rNoEndpointIPs                       // daddr . l4proto . dport vmap @no-endpoint-services
	rNoEndpointNodePorts                 // fib daddr local, l4proto . dport vmap @no-endpoint-nodeports
	rReject                              // reject
	rDrop                                // drop
	rMarkMasq                            // mark |= 0x4000
	rReturnUnmarked                      // mark & 0x4000 == 0 return
	rClearMark                           // mark ^= 0x4000
	rMasquerade                          // masquerade fully-random
	rHairpin                             // saddr . daddr @hairpin masquerade fully-random
	rMasqOutsideCIDR                     // saddr != CIDR jump mark-for-masquerade
	rLocalSourceJump                     // fib saddr local jump Target
	rLocalSourceGoto                     // fib saddr local goto Target
	rLB                                  // pick one of n endpoints of the packet's entry point and DNAT to it
	rLBAffinity                          // the client's remembered endpoint, if still one of n
	rFirewallIPs                         // daddr . l4proto . dport vmap @firewall-ips
	rReturnFromSource                    // saddr CIDR return
)

// rule is one nf_tables rule. It is comparable, so a chain's rules diff by
// ==, and renders both as text (golden files) and as expressions (kernel).
type rule struct {
	kind   ruleKind
	target string // chain for jumps, gotos
	n      uint32 // endpoints (numgen modulus), for rLB
	// nodePort: rLB keys on the node port rather than address and port;
	// localOrigin: it uses the maps for the node's own traffic.
	nodePort, localOrigin bool
	// affinity is the ClientIP affinity's timeout, 0 for none.
	affinity time.Duration
	cidr     netip.Prefix
}

func (r rule) String() string {
	switch r.kind {
	case rJump:
		return "jump " + r.target
	case rGoto:
		return "goto " + r.target
	case rServiceIPs:
		return "@nh daddr . meta l4proto . th dport vmap @service-ips"
	case rServiceNodePorts:
		return "fib daddr type local meta l4proto . th dport vmap @service-nodeports"
	case rNewConnCheck:
		return "ct state new jump " + r.target
	case rNoEndpointIPs:
		return "@nh daddr . meta l4proto . th dport vmap @no-endpoint-services"
	case rNoEndpointNodePorts:
		return "fib daddr type local meta l4proto . th dport vmap @no-endpoint-nodeports"
	case rReject:
		return "reject"
	case rDrop:
		return "drop"
	case rMarkMasq:
		return fmt.Sprintf("meta mark set mark or %#x", masqueradeBit)
	case rReturnUnmarked:
		return fmt.Sprintf("meta mark & %#x == 0 return", masqueradeBit)
	case rClearMark:
		return fmt.Sprintf("meta mark set mark xor %#x", masqueradeBit)
	case rMasquerade:
		return "masquerade fully-random"
	case rHairpin:
		return "@nh saddr . @nh daddr @hairpin masquerade fully-random"
	case rMasqOutsideCIDR:
		return fmt.Sprintf("@nh saddr != %s jump mark-for-masquerade", r.cidr)
	case rFirewallIPs:
		return "@nh daddr . meta l4proto . th dport vmap @" + mapFirewallIPs
	case rReturnFromSource:
		return fmt.Sprintf("@nh saddr %s return", r.cidr)
	case rLocalSourceJump:
		return "fib saddr type local jump " + r.target
	case rLocalSourceGoto:
		return "fib saddr type local goto " + r.target
	case rLB, rLBAffinity:
		key, aff := "@nh daddr . meta l4proto . th dport", "@"+mapAffinity
		if r.nodePort {
			key, aff = "meta l4proto . th dport", "@"+mapNodePortAffinity
		}
		m := "@" + r.endpointMap()
		if r.kind == rLBAffinity {
			return fmt.Sprintf("slot = %s . @nh saddr map %s, update %s timeout %s, dnat to %s . slot map %s", key, aff, aff, r.affinity, key, m)
		}
		s := fmt.Sprintf("slot = numgen random mod %d", r.n)
		if r.affinity > 0 {
			s += fmt.Sprintf(", replace %s { %s . @nh saddr : slot timeout %s }", aff, key, r.affinity)
		}
		return s + fmt.Sprintf(", dnat to %s . slot map %s", key, m)
	}
	return fmt.Sprintf("rule(%d)", r.kind)
}

type mapKind uint8

const (
	mServiceIPs        mapKind = iota // addr . proto . port : verdict
	mServiceNodePorts                 // proto . port : verdict
	mEndpoints                        // addr . proto . port . slot : addr . port
	mNodePortEndpoints                // proto . port . slot : addr . port
	mAffinity                         // addr . proto . port . client addr : slot, dynamic
	mNodePortAffinity                 // proto . port . client addr : slot, dynamic
	mHairpin                          // set: addr . addr
)

// mapDef is one named map or set.
type mapDef struct {
	kind    mapKind
	timeout time.Duration // mAffinity only
}

// elemKey is a map or set element's key; which fields count depends on
// the map's kind.
type elemKey struct {
	addr  netip.Addr
	proto uint8
	port  uint16
	slot  uint32
	addr2 netip.Addr
}

// elemVal is a map element's value: a verdict or an endpoint.
type elemVal struct {
	verdict string // "goto <chain>"
	addr    netip.Addr
	port    uint16
}

// elemRef names an element of a map.
type elemRef struct {
	m   string
	key elemKey
}

func (k elemKey) render(kind mapKind) string {
	switch kind {
	case mServiceIPs:
		return fmt.Sprintf("%s . %s . %d", k.addr, protoName(k.proto), k.port)
	case mServiceNodePorts:
		return fmt.Sprintf("%s . %d", protoName(k.proto), k.port)
	case mEndpoints:
		return fmt.Sprintf("%s . %s . %d . %d", k.addr, protoName(k.proto), k.port, k.slot)
	case mNodePortEndpoints:
		return fmt.Sprintf("%s . %d . %d", protoName(k.proto), k.port, k.slot)
	case mHairpin:
		return fmt.Sprintf("%s . %s", k.addr, k.addr2)
	}
	return fmt.Sprintf("%+v", k)
}

func (v elemVal) render() string {
	if v.verdict != "" {
		return v.verdict
	}
	if !v.addr.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s . %d", v.addr, v.port)
}

const (
	protoTCP  = 6
	protoUDP  = 17
	protoSCTP = 132
)

func protoName(p uint8) string {
	switch p {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoSCTP:
		return "sctp"
	}
	return fmt.Sprint(p)
}

// chainDef is a chain: a base chain when hook is set.
type chainDef struct {
	hook  *hook
	rules []rule
}

type hook struct {
	nat      bool // type nat, else filter
	hooknum  string
	priority int32
}

// fragment is everything one Service contributes to one family's table:
// its own chains, the shared load-balancing chains it uses, and elements of
// the shared maps. Fragments are immutable once computed.
type fragment struct {
	chains map[string][]rule
	// elems are the fragment's elements other than its endpoints' (those
	// are in groups) and the hairpin set's (the table counts those).
	elems map[elemRef]elemVal
	// groups hold the endpoint map elements: a Service's endpoints are most
	// of its elements, and kept as slot arrays they diff slot by slot
	// without hashing each element (a dry-run proxy's main cost).
	groups []epGroup
	// lbs are the shared load-balancing chains the fragment uses.
	lbs map[string]lbDef
	// slots is the endpoint order per port and use ("<port id> cluster",
	// "<port id> local"), kept across recomputations so unchanged endpoints
	// keep their slots.
	slots map[string][]netip.AddrPort
	ports int
}

// epGroup is the elements of one endpoint map for a set of entry points:
// each key, with slot i, maps to slots[i]. Every endpoint in slots is also
// in the hairpin set.
type epGroup struct {
	m     string
	keys  []elemKey
	slots []netip.AddrPort // shared with fragment.slots: read-only
}

// elem returns the group's element for key at slot.
func (g *epGroup) elem(k elemKey, slot int) (elemRef, elemVal) {
	k.slot = uint32(slot)
	ap := g.slots[slot]
	return elemRef{g.m, k}, elemVal{addr: ap.Addr(), port: ap.Port()}
}

// addGroup adds slots at keys of map m, leaving out keys an earlier group
// of the fragment already has there (an external IP equal to the cluster
// IP): the first one wins, as one map element can hold one endpoint.
func (f *fragment) addGroup(m string, keys []elemKey, slots []netip.AddrPort) {
	var own []elemKey
	for _, k := range keys {
		taken := slices.Contains(own, k)
		for i := range f.groups {
			taken = taken || (f.groups[i].m == m && slices.Contains(f.groups[i].keys, k))
		}
		if !taken {
			own = append(own, k)
		}
	}
	if len(own) > 0 {
		f.groups = append(f.groups, epGroup{m: m, keys: own, slots: slots})
	}
}

// all yields every element of the fragment but its hairpin ones.
func (f *fragment) all() iter.Seq2[elemRef, elemVal] {
	return func(yield func(elemRef, elemVal) bool) {
		for ref, v := range f.elems {
			if !yield(ref, v) {
				return
			}
		}
		for i := range f.groups {
			g := &f.groups[i]
			for _, k := range g.keys {
				for slot := range g.slots {
					if !yield(g.elem(k, slot)) {
						return
					}
				}
			}
		}
	}
}

// lbDef is a shared load-balancing chain: one rule (two with affinity)
// keyed on the packet, for every port with n endpoints. Sharing is what
// keeps the per-Service cost flat: the kernel walks a map's every element
// each time a rule binds it for a lookup, so only these few rules may.
type lbDef struct {
	nodePort, localOrigin bool
	n                     uint32
	affinity              time.Duration
}

func (d lbDef) rules() []rule {
	lb := rule{kind: rLB, n: d.n, nodePort: d.nodePort, localOrigin: d.localOrigin, affinity: d.affinity}
	if d.affinity == 0 {
		return []rule{lb}
	}
	aff := lb
	aff.kind = rLBAffinity
	return []rule{aff, lb}
}

// endpointMap is the map an rLB or rLBAffinity rule looks endpoints up in.
func (r rule) endpointMap() string {
	switch {
	case r.nodePort && r.localOrigin:
		return mapLocalOriginNodePortEndpoints
	case r.nodePort:
		return mapNodePortEndpoints
	case r.localOrigin:
		return mapLocalOriginEndpoints
	}
	return mapEndpoints
}

// newFragment returns an empty fragment sized like like (nil: small): a
// Service's next fragment is usually its previous one's size, and growing
// its maps element by element was a sixth of a dry-run proxy's CPU.
func newFragment(like *fragment) *fragment {
	if like == nil {
		like = &fragment{}
	}
	return &fragment{chains: make(map[string][]rule, len(like.chains)), elems: make(map[elemRef]elemVal, len(like.elems)),
		groups: make([]epGroup, 0, len(like.groups)), lbs: make(map[string]lbDef, len(like.lbs)), slots: make(map[string][]netip.AddrPort, len(like.slots))}
}

// Shared maps and chains every table has.
const (
	mapServiceIPs          = "service-ips"
	mapServiceNodePorts    = "service-nodeports"
	mapNoEndpointServices  = "no-endpoint-services"
	mapNoEndpointNodePorts = "no-endpoint-nodeports"
	setHairpin             = "hairpin"
	mapEndpoints           = "endpoints"
	mapNodePortEndpoints   = "nodeport-endpoints"
	// The node's own traffic to Local-policy external entry points.
	mapLocalOriginEndpoints         = "local-origin-endpoints"
	mapLocalOriginNodePortEndpoints = "local-origin-nodeport-endpoints"
	mapAffinity                     = "affinity"
	mapNodePortAffinity             = "nodeport-affinity"
	chainMarkForMasq                = "mark-for-masquerade"
	chainReject                     = "reject-chain"
	// Load balancer IPs with loadBalancerSourceRanges go to a per-port
	// chain that drops new connections from other sources, before DNAT.
	mapFirewallIPs     = "firewall-ips"
	chainFirewallCheck = "firewall-check"
)

// base returns the chains and maps every table has, independent of Services.
func base() (map[string]chainDef, map[string]mapDef) {
	chains := map[string]chainDef{
		"nat-prerouting":  {hook: &hook{nat: true, hooknum: "prerouting", priority: -100}, rules: []rule{{kind: rJump, target: "services"}}},
		"nat-output":      {hook: &hook{nat: true, hooknum: "output", priority: -100}, rules: []rule{{kind: rJump, target: "services"}}},
		"nat-postrouting": {hook: &hook{nat: true, hooknum: "postrouting", priority: 100}, rules: []rule{{kind: rJump, target: "masquerading"}}},
		"filter-input":    {hook: &hook{hooknum: "input", priority: -110}, rules: []rule{{kind: rNewConnCheck, target: "endpoints-check"}}},
		"filter-forward":  {hook: &hook{hooknum: "forward", priority: -110}, rules: []rule{{kind: rNewConnCheck, target: "endpoints-check"}}},
		"filter-output": {hook: &hook{hooknum: "output", priority: -110}, rules: []rule{
			{kind: rNewConnCheck, target: "endpoints-check"}, {kind: rNewConnCheck, target: chainFirewallCheck}}},
		// Upstream's filter-prerouting-pre-dnat: the firewall sees the load
		// balancer IP before nat-prerouting rewrites it.
		"filter-prerouting": {hook: &hook{hooknum: "prerouting", priority: -110}, rules: []rule{{kind: rNewConnCheck, target: chainFirewallCheck}}},
		chainFirewallCheck:  {rules: []rule{{kind: rFirewallIPs}}},
		"services":          {rules: []rule{{kind: rServiceIPs}, {kind: rServiceNodePorts}}},
		"endpoints-check":   {rules: []rule{{kind: rNoEndpointIPs}, {kind: rNoEndpointNodePorts}}},
		chainReject:         {rules: []rule{{kind: rReject}}},
		chainMarkForMasq:    {rules: []rule{{kind: rMarkMasq}}},
		"masquerading":      {rules: []rule{{kind: rHairpin}, {kind: rReturnUnmarked}, {kind: rClearMark}, {kind: rMasquerade}}},
	}
	maps := map[string]mapDef{
		mapServiceIPs:          {kind: mServiceIPs},
		mapServiceNodePorts:    {kind: mServiceNodePorts},
		mapNoEndpointServices:  {kind: mServiceIPs},
		mapNoEndpointNodePorts: {kind: mServiceNodePorts},
		mapFirewallIPs:         {kind: mServiceIPs},
		setHairpin:             {kind: mHairpin},
		// Every Service's endpoints live in these maps, keyed by the entry
		// point and slot, and every affinity in the dynamic ones: the kernel
		// finds a set by name with a linear search of the table's sets, so
		// a map per Service made each transaction O(Services).
		mapEndpoints:                    {kind: mEndpoints},
		mapNodePortEndpoints:            {kind: mNodePortEndpoints},
		mapLocalOriginEndpoints:         {kind: mEndpoints},
		mapLocalOriginNodePortEndpoints: {kind: mNodePortEndpoints},
		mapAffinity:                     {kind: mAffinity, timeout: 3 * time.Hour},
		mapNodePortAffinity:             {kind: mNodePortAffinity, timeout: 3 * time.Hour},
	}
	return chains, maps
}

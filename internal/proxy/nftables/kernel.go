package nftables

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// socketBuffer is the netlink socket's send and receive buffer: a whole
// transaction goes to the kernel in one sendmsg, so the buffer bounds the
// largest transaction (a full rewrite at 30,000 Services is tens of MB).
const socketBuffer = 256 << 20

// maxElemBytes caps the encoded elements of one NEWSETELEM message: they
// travel in one nested attribute, whose length is 16 bits, so a message
// with more than 64 KiB of elements is malformed (the kernel answers
// ENOENT, having parsed garbage). The estimate per element is generous.
const maxElemBytes = 48 << 10

// kernel writes plans to nf_tables over netlink.
type kernel struct {
	mu   sync.Mutex
	conn *nftables.Conn
	ct   *conntrack
	log  *slog.Logger
}

// New returns the kernel backend. It touches nothing until the first Sync,
// which creates the tables.
func New(cfg Config) (*Backend, error) {
	opts := []nftables.ConnOption{nftables.AsLasting(), nftables.WithSockOptions(bigBuffers)}
	if cfg.NetNSFd != 0 {
		opts = append(opts, nftables.WithNetNSFd(cfg.NetNSFd))
	}
	conn, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("opening nftables netlink socket: %w", err)
	}
	ct, err := newConntrack(cfg.NetNSFd)
	if err != nil {
		_ = conn.CloseLasting()
		return nil, err
	}
	b := newBackend(cfg, nil)
	b.w = &kernel{conn: conn, ct: ct, log: b.cfg.Logger}
	b.probeProtocols(func() error { return probeSCTP(conn) })
	return b, nil
}

// probeProtocols drops SCTP from the protocols the backend programs when
// probe says the kernel cannot forward it: its ports are then reported
// (event ServicePortNotProgrammed, metric myriad_proxy_skipped_service_ports)
// and skipped like any unprogrammable port, rather than failing every
// transaction that holds one.
func (b *Backend) probeProtocols(probe func() error) {
	if !b.Supports(v1.ProtocolSCTP) {
		return
	}
	if err := probe(); err != nil {
		b.log.Warn("the kernel cannot forward SCTP; SCTP service ports will be skipped", "err", err)
		b.cfg.Protocols = slices.DeleteFunc(slices.Clone(b.cfg.Protocols), func(p v1.Protocol) bool { return p == v1.ProtocolSCTP })
	}
}

// probeTable is the throwaway table probeSCTP writes, named per process so
// two proxies probing one namespace do not meet.
func probeTable() *nftables.Table {
	return &nftables.Table{Name: fmt.Sprintf("myriad-proxy-probe-%d", os.Getpid()), Family: nftables.TableFamilyIPv4}
}

// probeSCTP asks the kernel to accept what an SCTP service port needs — a
// nat chain rule matching SCTP and DNATing it to an address and port — in
// a throwaway table, then deletes the table.
func probeSCTP(conn *nftables.Conn) error {
	t := probeTable()
	conn.AddTable(t)
	ch := conn.AddChain(baseChain(t, "probe", &hook{nat: true, hooknum: "prerouting", priority: -100}))
	conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{protoSCTP}},
		&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binary.BigEndian.AppendUint16(nil, 9)},
		&expr.Immediate{Register: reg1, Data: []byte{127, 0, 0, 1}},
		&expr.Immediate{Register: reg3201, Data: binary.BigEndian.AppendUint16(nil, 9)},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: reg1, RegProtoMin: reg3201, Specified: true},
	}})
	conn.DelTable(t)
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("probing SCTP in nf_tables: %w", err)
	}
	return nil
}

// Close releases the netlink socket.
func (b *Backend) Close() error {
	if k, ok := b.w.(*kernel); ok {
		k.ct.close()
		return k.conn.CloseLasting()
	}
	return nil
}

func bigBuffers(c *netlink.Conn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		// The FORCE variants pass net.core.{w,r}mem_max (root only); fall
		// back to the capped ones without privilege.
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer); serr != nil {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
		}
		if serr == nil {
			if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, socketBuffer); serr != nil {
				serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, socketBuffer)
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

func nftTable(fam proxy.Family) *nftables.Table {
	f := nftables.TableFamilyIPv4
	if fam == proxy.IPv6 {
		f = nftables.TableFamilyIPv6
	}
	return &nftables.Table{Name: TableName, Family: f}
}

func (k *kernel) apply(ctx context.Context, tables map[proxy.Family]*table, plans map[proxy.Family]*plan) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	any := false
	for fam, p := range plans {
		if p.empty() {
			continue
		}
		any = true
		if err := k.queuePlan(nftTable(fam), fam, p); err != nil {
			return err
		}
	}
	if !any {
		return nil
	}
	if err := k.flush(ctx); err != nil {
		return err
	}
	// The rules are in place; a failure here must not fail the sync (the
	// transaction is committed and would not apply twice), so it is logged
	// and the entries age out on conntrack's UDP timeout instead.
	var stale []staleFlow
	for fam, p := range plans {
		stale = append(stale, staleUDPFlows(fam, p)...)
	}
	if len(stale) > 0 {
		if err := k.ct.delete(stale); err != nil {
			k.log.Warn("stale UDP flows left in conntrack", "flows", len(stale), "err", err)
		}
	}
	return nil
}

func (k *kernel) flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := k.conn.Flush(); err != nil {
		return fmt.Errorf("nftables transaction: %w", err)
	}
	return nil
}

func (k *kernel) queuePlan(t *nftables.Table, fam proxy.Family, p *plan) error {
	c := k.conn
	for _, name := range p.newChains {
		c.AddChain(&nftables.Chain{Name: name, Table: t})
	}
	for _, name := range p.rewrites {
		ch := &nftables.Chain{Name: name, Table: t}
		c.FlushChain(ch)
		for _, r := range p.chainRules[name] {
			c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs(fam, r)})
		}
	}
	// Elements after the chains their verdicts go to exist, deletions
	// before the chains they went to are deleted.
	if err := k.queueElems(t, fam, p.elemDel, true); err != nil {
		return err
	}
	if err := k.queueElems(t, fam, p.elemAdd, false); err != nil {
		return err
	}
	// All flushed before any is deleted: a Service's chain jumps to a
	// shared lb chain that may go in the same transaction.
	for _, name := range p.delChains {
		c.FlushChain(&nftables.Chain{Name: name, Table: t})
	}
	for _, name := range p.delChains {
		c.DelChain(&nftables.Chain{Name: name, Table: t})
	}
	return nil
}

// queueElems adds (or deletes) ops, grouped per map, in bounded messages.
func (k *kernel) queueElems(t *nftables.Table, fam proxy.Family, ops []elemOp, del bool) error {
	for i := 0; i < len(ops); {
		j, size := i, 0
		for j < len(ops) && ops[j].ref.m == ops[i].ref.m && size < maxElemBytes {
			size += elemSizeEstimate(ops[j])
			j++
		}
		s := setFor(t, fam, ops[i].ref.m, mapDef{kind: ops[i].kind})
		elems := make([]nftables.SetElement, 0, j-i)
		for _, op := range ops[i:j] {
			elems = append(elems, element(fam, op.kind, op.ref.key, op.val))
		}
		var err error
		if del {
			err = k.conn.SetDeleteElements(s, elems)
		} else {
			err = k.conn.SetAddElements(s, elems)
		}
		if err != nil {
			return fmt.Errorf("map %s: %w", ops[i].ref.m, err)
		}
		i = j
	}
	return nil
}

// rewrite replaces each table's content with its whole desired state in
// one transaction: flush every chain and static map, re-add everything,
// delete what is not desired. Affinity maps are kept (not flushed) so
// clients keep their endpoints across a resync.
func (k *kernel) rewrite(ctx context.Context, tables map[proxy.Family]*table) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.conn
	for fam, tb := range tables {
		t := nftTable(fam)
		existingChains, existingSets, err := k.list(t)
		if err != nil {
			return err
		}
		c.AddTable(t)
		if len(existingChains) > 0 {
			c.FlushTable(t)
		}
		chains, maps := tb.baseChains, tb.baseMaps
		allChains := map[string][]rule{}
		allMaps := map[string]mapDef{}
		for n, d := range maps {
			allMaps[n] = d
		}
		for n, ch := range chains {
			allChains[n] = ch.rules
		}
		var ops []elemOp
		for _, f := range tb.frags {
			for n, r := range f.chains {
				allChains[n] = r
			}
			for n, d := range f.lbs {
				allChains[n] = d.rules()
			}
		}
		for _, f := range tb.frags {
			for ref, v := range f.all() {
				ops = append(ops, elemOp{ref, v, allMaps[ref.m].kind})
			}
		}
		for key := range tb.hairpin {
			ops = append(ops, elemOp{elemRef{setHairpin, key}, elemVal{}, mHairpin})
		}
		sortOps(ops)
		for name, isMap := range existingSets {
			if d, ok := allMaps[name]; isMap && ok && (d.kind == mAffinity || d.kind == mNodePortAffinity) {
				continue
			}
			c.FlushSet(&nftables.Set{Table: t, Name: name})
		}
		for _, name := range sortedKeys(allMaps) {
			if _, ok := existingSets[name]; ok {
				continue
			}
			if err := c.AddSet(setFor(t, fam, name, allMaps[name]), nil); err != nil {
				return fmt.Errorf("adding map %s: %w", name, err)
			}
		}
		for _, name := range sortedKeys(allChains) {
			ch := &nftables.Chain{Name: name, Table: t}
			if bc, ok := chains[name]; ok && bc.hook != nil {
				ch = baseChain(t, name, bc.hook)
			}
			c.AddChain(ch)
		}
		if err := k.queueElems(t, fam, ops, false); err != nil {
			return err
		}
		for _, name := range sortedKeys(allChains) {
			ch := &nftables.Chain{Name: name, Table: t}
			for _, r := range allChains[name] {
				c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs(fam, r)})
			}
		}
		for name := range existingChains {
			if _, ok := allChains[name]; !ok {
				c.DelChain(&nftables.Chain{Name: name, Table: t})
			}
		}
		for name := range existingSets {
			if _, ok := allMaps[name]; !ok {
				c.DelSet(&nftables.Set{Table: t, Name: name})
			}
		}
	}
	return k.flush(ctx)
}

// list returns the chains and sets (name → is a map) now in table t.
func (k *kernel) list(t *nftables.Table) (map[string]bool, map[string]bool, error) {
	chains, sets := map[string]bool{}, map[string]bool{}
	if _, err := k.conn.ListTableOfFamily(t.Name, t.Family); err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
			return chains, sets, nil
		}
		return nil, nil, fmt.Errorf("listing table %s: %w", t.Name, err)
	}
	cs, err := k.conn.ListChainsOfTableFamily(t.Family)
	if err != nil {
		return nil, nil, fmt.Errorf("listing chains: %w", err)
	}
	for _, ch := range cs {
		if ch.Table.Name == t.Name {
			chains[ch.Name] = true
		}
	}
	ss, err := k.conn.GetSets(t)
	if err != nil {
		return nil, nil, fmt.Errorf("listing maps: %w", err)
	}
	for _, s := range ss {
		sets[s.Name] = s.IsMap
	}
	return chains, sets, nil
}

func baseChain(t *nftables.Table, name string, h *hook) *nftables.Chain {
	ch := &nftables.Chain{Name: name, Table: t, Type: nftables.ChainTypeFilter, Priority: nftables.ChainPriorityRef(nftables.ChainPriority(h.priority))}
	if h.nat {
		ch.Type = nftables.ChainTypeNAT
	}
	switch h.hooknum {
	case "prerouting":
		ch.Hooknum = nftables.ChainHookPrerouting
	case "input":
		ch.Hooknum = nftables.ChainHookInput
	case "forward":
		ch.Hooknum = nftables.ChainHookForward
	case "output":
		ch.Hooknum = nftables.ChainHookOutput
	case "postrouting":
		ch.Hooknum = nftables.ChainHookPostrouting
	}
	return ch
}

func addrType(fam proxy.Family) nftables.SetDatatype {
	if fam == proxy.IPv6 {
		return nftables.TypeIP6Addr
	}
	return nftables.TypeIPAddr
}

func mustConcat(ts ...nftables.SetDatatype) nftables.SetDatatype {
	t, err := nftables.ConcatSetType(ts...)
	if err != nil {
		panic(err) // only fixed type lists reach here
	}
	return t
}

// setFor describes a map or set to the library.
func setFor(t *nftables.Table, fam proxy.Family, name string, d mapDef) *nftables.Set {
	s := &nftables.Set{Table: t, Name: name}
	a := addrType(fam)
	switch d.kind {
	case mServiceIPs:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(a, nftables.TypeInetProto, nftables.TypeInetService), true, true, nftables.TypeVerdict
	case mServiceNodePorts:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(nftables.TypeInetProto, nftables.TypeInetService), true, true, nftables.TypeVerdict
	case mEndpoints:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(a, nftables.TypeInetProto, nftables.TypeInetService, nftables.TypeInteger), true, true, mustConcat(a, nftables.TypeInetService)
	case mNodePortEndpoints:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(nftables.TypeInetProto, nftables.TypeInetService, nftables.TypeInteger), true, true, mustConcat(a, nftables.TypeInetService)
	case mAffinity:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(a, nftables.TypeInetProto, nftables.TypeInetService, a), true, true, nftables.TypeInteger
		s.Dynamic, s.HasTimeout, s.Timeout = true, true, d.timeout
	case mNodePortAffinity:
		s.KeyType, s.Concatenation, s.IsMap, s.DataType = mustConcat(nftables.TypeInetProto, nftables.TypeInetService, a), true, true, nftables.TypeInteger
		s.Dynamic, s.HasTimeout, s.Timeout = true, true, d.timeout
	case mHairpin:
		s.KeyType, s.Concatenation = mustConcat(a, a), true
	}
	return s
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func port(p uint16) []byte { return pad4(binary.BigEndian.AppendUint16(nil, p)) }

func element(fam proxy.Family, kind mapKind, k elemKey, v elemVal) nftables.SetElement {
	var e nftables.SetElement
	switch kind {
	case mServiceIPs:
		e.Key = append(append(k.addr.AsSlice(), pad4([]byte{k.proto})...), port(k.port)...)
	case mServiceNodePorts:
		e.Key = append(pad4([]byte{k.proto}), port(k.port)...)
	case mEndpoints:
		e.Key = append(append(append(k.addr.AsSlice(), pad4([]byte{k.proto})...), port(k.port)...), u32(k.slot)...)
		e.Val = append(v.addr.AsSlice(), port(v.port)...)
	case mNodePortEndpoints:
		e.Key = append(append(pad4([]byte{k.proto}), port(k.port)...), u32(k.slot)...)
		e.Val = append(v.addr.AsSlice(), port(v.port)...)
	case mHairpin:
		e.Key = append(k.addr.AsSlice(), k.addr2.AsSlice()...)
	}
	if len(v.verdict) > 5 && v.verdict[:5] == "goto " {
		e.VerdictData = &expr.Verdict{Kind: expr.VerdictGoto, Chain: v.verdict[5:]}
	}
	return e
}

// elemSizeEstimate bounds an element's netlink encoding: attribute headers,
// a key and value of at most 40 bytes, and a verdict's chain name.
func elemSizeEstimate(op elemOp) int {
	return 96 + len(op.val.verdict)
}

func sortOps(ops []elemOp) {
	slices.SortFunc(ops, compareOps)
}

// Registers: the 16-byte NFT_REG_1 is 32-bit registers 8..11, so a
// concatenation loaded at NFT_REG_1 continues at 9 (after 4 bytes) or 12
// (after 16).
// dynsetOpDelete is the kernel's NFT_DYNSET_OP_DELETE (Linux 5.13+), which
// golang.org/x/sys does not define.
const dynsetOpDelete = 2

const (
	reg1    = 1
	reg4    = 4
	reg3200 = 8
	reg3201 = 9
	reg3202 = 10
	reg3204 = 12
	reg3205 = 13
)

func nh(fam proxy.Family, src bool, reg uint32) *expr.Payload {
	off, l := uint32(16), uint32(4)
	if src {
		off = 12
	}
	if fam == proxy.IPv6 {
		off, l = 24, 16
		if src {
			off = 8
		}
	}
	return &expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: l}
}

func afterAddr(fam proxy.Family) (uint32, uint32) {
	if fam == proxy.IPv6 {
		return reg3204, reg3205
	}
	return reg3201, reg3202
}

func u32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }

func fibLocal(saddr bool) []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: reg1, FlagSADDR: saddr, FlagDADDR: !saddr, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: u32(unix.RTN_LOCAL)},
	}
}

func l4protoDport(protoReg, portReg uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: protoReg},
		&expr.Payload{DestRegister: portReg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
	}
}

func vmap(name string) *expr.Lookup {
	return &expr.Lookup{SourceRegister: reg1, DestRegister: 0, IsDestRegSet: true, SetName: name}
}

func loadMark() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: reg1}}
}

func natFamily(fam proxy.Family) uint32 {
	if fam == proxy.IPv6 {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// sourceIn compares the packet's source address, masked to cidr's length,
// with cidr (op Eq: inside it; Neq: outside).
func sourceIn(fam proxy.Family, cidr netip.Prefix, op expr.CmpOp) []expr.Any {
	n := len(cidr.Addr().AsSlice())
	mask := make([]byte, n)
	for i := 0; i < cidr.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{nh(fam, true, reg1),
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: uint32(n), Mask: mask, Xor: make([]byte, n)},
		&expr.Cmp{Op: op, Register: reg1, Data: cidr.Masked().Addr().AsSlice()}}
}

// exprs compiles a rule for the kernel.
func exprs(fam proxy.Family, r rule) []expr.Any {
	switch r.kind {
	case rJump:
		return []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: r.target}}
	case rGoto:
		return []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: r.target}}
	case rServiceIPs, rNoEndpointIPs:
		m := mapServiceIPs
		if r.kind == rNoEndpointIPs {
			m = mapNoEndpointServices
		}
		pr, po := afterAddr(fam)
		return append(append([]expr.Any{nh(fam, false, reg1)}, l4protoDport(pr, po)...), vmap(m))
	case rServiceNodePorts, rNoEndpointNodePorts:
		m := mapServiceNodePorts
		if r.kind == rNoEndpointNodePorts {
			m = mapNoEndpointNodePorts
		}
		return append(append(fibLocal(false), l4protoDport(reg1, reg3201)...), vmap(m))
	case rNewConnCheck:
		return []expr.Any{
			&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: u32(expr.CtStateBitNEW), Xor: u32(0)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: u32(0)},
			&expr.Verdict{Kind: expr.VerdictJump, Chain: r.target},
		}
	case rReject:
		code := uint8(3) // ICMP port unreachable
		if fam == proxy.IPv6 {
			code = 4 // ICMPv6 port unreachable
		}
		return []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code}}
	case rDrop:
		return []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}
	case rMarkMasq:
		return append(loadMark(),
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: u32(^uint32(masqueradeBit)), Xor: u32(masqueradeBit)},
			&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1})
	case rReturnUnmarked:
		return append(loadMark(),
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: u32(masqueradeBit), Xor: u32(0)},
			&expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: u32(0)},
			&expr.Verdict{Kind: expr.VerdictReturn})
	case rClearMark:
		return append(loadMark(),
			&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: u32(^uint32(0)), Xor: u32(masqueradeBit)},
			&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: reg1})
	case rMasquerade:
		return []expr.Any{&expr.Masq{FullyRandom: true}}
	case rHairpin:
		second, _ := afterAddr(fam)
		return []expr.Any{nh(fam, true, reg1), nh(fam, false, second),
			&expr.Lookup{SourceRegister: reg1, SetName: setHairpin}, &expr.Masq{FullyRandom: true}}
	case rMasqOutsideCIDR:
		return append(sourceIn(fam, r.cidr, expr.CmpOpNeq), &expr.Verdict{Kind: expr.VerdictJump, Chain: chainMarkForMasq})
	case rReturnFromSource:
		return append(sourceIn(fam, r.cidr, expr.CmpOpEq), &expr.Verdict{Kind: expr.VerdictReturn})
	case rFirewallIPs:
		pr, po := afterAddr(fam)
		return append(append([]expr.Any{nh(fam, false, reg1)}, l4protoDport(pr, po)...), vmap(mapFirewallIPs))
	case rLocalSourceJump:
		return append(fibLocal(true), &expr.Verdict{Kind: expr.VerdictJump, Chain: r.target})
	case rLocalSourceGoto:
		return append(fibLocal(true), &expr.Verdict{Kind: expr.VerdictGoto, Chain: r.target})
	case rLB, rLBAffinity:
		return lbExprs(fam, r)
	}
	panic(fmt.Sprintf("nftables: no expressions for rule kind %d", r.kind))
}

// lbExprs compiles a load-balancing rule. Registers (32-bit numbering) from
// 8: the entry point (daddr . l4proto . dport, or l4proto . dport for node
// ports), then the client address or the slot; the kernel only lets a rule
// read registers it wrote itself, so each rule loads its own key.
func lbExprs(fam proxy.Family, r rule) []expr.Any {
	addrWords := uint32(1)
	if fam == proxy.IPv6 {
		addrWords = 4
	}
	var out []expr.Any
	next := uint32(reg3200)
	endpoints, affinity := r.endpointMap(), mapAffinity
	if r.nodePort {
		affinity = mapNodePortAffinity
	} else {
		out = append(out, nh(fam, false, next))
		next += addrWords
	}
	out = append(out, l4protoDport(next, next+1)...)
	last := next + 2 // the client address, then the slot
	protoReg, _ := afterAddr(fam)
	dnat := []expr.Any{
		&expr.Bitwise{SourceRegister: reg4, DestRegister: last, Len: 4, Mask: u32(^uint32(0)), Xor: u32(0)},
		&expr.Lookup{SourceRegister: reg3200, DestRegister: reg1, IsDestRegSet: true, SetName: endpoints},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: natFamily(fam), RegAddrMin: reg1, RegProtoMin: protoReg, Specified: true},
	}
	if r.kind == rLBAffinity {
		// A client with a remembered slot: refresh it and use it. A slot
		// past the current endpoints misses the endpoint lookup, and the
		// next rule picks anew.
		out = append(out, nh(fam, true, last),
			&expr.Lookup{SourceRegister: reg3200, DestRegister: reg4, IsDestRegSet: true, SetName: affinity},
			&expr.Dynset{SrcRegKey: reg3200, SrcRegData: reg4, SetName: affinity, Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: r.affinity})
		return append(out, dnat...)
	}
	out = append(out, &expr.Numgen{Register: reg4, Modulus: r.n, Type: unix.NFT_NG_RANDOM})
	if r.affinity > 0 {
		// update never replaces an entry's data: delete a stale one first
		// (a map's dynset needs a data register even to delete).
		out = append(out, nh(fam, true, last),
			&expr.Dynset{SrcRegKey: reg3200, SrcRegData: reg4, SetName: affinity, Operation: dynsetOpDelete},
			&expr.Dynset{SrcRegKey: reg3200, SrcRegData: reg4, SetName: affinity, Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: r.affinity})
	}
	return append(out, dnat...)
}

package nftables

import (
	"cmp"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// table is one family's programmed state: the base objects plus every
// Service's fragment. Only the backend's sync goroutine touches it.
type table struct {
	fam        proxy.Family
	masq       masqueradePolicy
	baseChains map[string]chainDef
	baseMaps   map[string]mapDef
	frags      map[types.NamespacedName]*fragment
	// hairpin counts the endpoint slots (of every fragment's groups) at each
	// hairpin element's address: one endpoint can serve many Services.
	hairpin     map[elemKey]int
	initialized bool // the table exists in the kernel
	// lbs counts the fragments using each shared load-balancing chain.
	lbs map[string]int
}

func newTable(fam proxy.Family, masq masqueradePolicy) *table {
	c, m := base()
	return &table{fam: fam, masq: masq, baseChains: c, baseMaps: m,
		frags: map[types.NamespacedName]*fragment{}, hairpin: map[elemKey]int{}, lbs: map[string]int{}}
}

// elemOp is one element to add or delete, with its map's kind.
type elemOp struct {
	ref  elemRef
	val  elemVal
	kind mapKind
}

// plan is one transaction for one table, its operations grouped in the
// order the kernel needs them: objects exist before anything refers to
// them, and references go before the objects they point at are deleted.
type plan struct {
	newChains []string
	rewrites  []string // chains to flush and refill from chainRules
	elemDel   []elemOp
	elemAdd   []elemOp
	delChains []string

	next         map[types.NamespacedName]*fragment // nil value: delete
	hairpinDelta map[elemKey]int
	lbDelta      map[string]int
	lbDefs       map[string]lbDef
	chainRules   map[string][]rule
}

// newPlan returns an empty plan; its maps are made by the first diff, so
// a family no change touches costs nothing.
func newPlan() *plan { return &plan{} }

func (p *plan) init() {
	if p.next == nil {
		p.next, p.hairpinDelta, p.lbDelta = map[types.NamespacedName]*fragment{}, map[elemKey]int{}, map[string]int{}
		p.lbDefs, p.chainRules = map[string]lbDef{}, map[string][]rule{}
	}
}

func (p *plan) empty() bool {
	return len(p.newChains)+len(p.rewrites)+len(p.elemDel)+len(p.elemAdd)+len(p.delChains) == 0
}

func (p *plan) result() proxy.SyncResult {
	r := proxy.SyncResult{
		Elements: len(p.elemDel) + len(p.elemAdd),
		Chains:   len(p.newChains) + len(p.rewrites) + len(p.delChains),
	}
	for _, c := range p.rewrites {
		r.Rules += len(p.chainRules[c])
	}
	return r
}

// diff adds to p what turns old into new for one Service.
func (t *table) diff(p *plan, key types.NamespacedName, old, new *fragment) {
	p.init()
	// An absent fragment reads as an empty one (nil maps read as empty).
	if old == nil {
		old = &fragment{}
	}
	if new == nil {
		new = &fragment{}
	}
	for name, rules := range new.chains {
		oldRules, existed := old.chains[name]
		if !existed {
			p.newChains = append(p.newChains, name)
		}
		if !existed || !equalRules(oldRules, rules) {
			p.rewrites = append(p.rewrites, name)
			p.chainRules[name] = rules
		}
	}
	for ref, v := range old.elems {
		if nv, ok := new.elems[ref]; ok && nv == v {
			continue
		}
		p.elemDel = append(p.elemDel, elemOp{ref, v, t.baseMaps[ref.m].kind})
	}
	for ref, v := range new.elems {
		if ov, ok := old.elems[ref]; ok && ov == v {
			continue
		}
		p.elemAdd = append(p.elemAdd, elemOp{ref, v, t.baseMaps[ref.m].kind})
	}
	matched := make([]bool, len(old.groups))
	for i := range new.groups {
		ng := &new.groups[i]
		j := slices.IndexFunc(old.groups, func(og epGroup) bool { return og.m == ng.m && slices.Equal(og.keys, ng.keys) })
		if j < 0 {
			t.diffGroup(p, nil, ng)
			continue
		}
		matched[j] = true
		t.diffGroup(p, &old.groups[j], ng)
	}
	for j := range old.groups {
		if !matched[j] {
			t.diffGroup(p, &old.groups[j], nil)
		}
	}
	for name := range old.chains {
		if _, ok := new.chains[name]; !ok {
			p.delChains = append(p.delChains, name)
		}
	}
	for name, d := range new.lbs {
		if _, ok := old.lbs[name]; !ok {
			p.lbDelta[name]++
			p.lbDefs[name] = d
		}
	}
	for name := range old.lbs {
		if _, ok := new.lbs[name]; !ok {
			p.lbDelta[name]--
		}
	}
	p.next[key] = new
}

// diffGroup adds to p what turns old into new (same map and keys; either
// may be nil), slot by slot: an endpoint that keeps its slot costs a
// comparison.
func (t *table) diffGroup(p *plan, old, new *epGroup) {
	var before, after []netip.AddrPort
	g := new
	if old != nil {
		before, g = old.slots, old
	}
	if new != nil {
		after = new.slots
	}
	kind := t.baseMaps[g.m].kind
	slots := max(len(before), len(after))
	changed := 0
	for slot := range slots {
		if slot >= len(before) || slot >= len(after) || before[slot] != after[slot] {
			changed++
		}
	}
	if changed == 0 {
		return
	}
	// Room for this group's operations and the hairpin set's that finish
	// adds, so a large change grows each list once.
	p.elemDel = slices.Grow(p.elemDel, changed*(len(g.keys)+1))
	p.elemAdd = slices.Grow(p.elemAdd, changed*(len(g.keys)+1))
	for slot := range slots {
		var was, is netip.AddrPort
		if slot < len(before) {
			was = before[slot]
		}
		if slot < len(after) {
			is = after[slot]
		}
		if was == is {
			continue
		}
		if was.IsValid() {
			for _, k := range old.keys {
				ref, v := old.elem(k, slot)
				p.elemDel = append(p.elemDel, elemOp{ref, v, kind})
			}
			p.hairpinDelta[hairpinKey(was)]--
		}
		if is.IsValid() {
			for _, k := range new.keys {
				ref, v := new.elem(k, slot)
				p.elemAdd = append(p.elemAdd, elemOp{ref, v, kind})
			}
			p.hairpinDelta[hairpinKey(is)]++
		}
	}
}

// hairpinKey is the hairpin set's element for an endpoint: traffic from
// the endpoint to itself through its Service is masqueraded.
func hairpinKey(ap netip.AddrPort) elemKey { return elemKey{addr: ap.Addr(), addr2: ap.Addr()} }

// finish turns the hairpin reference deltas into element operations and
// sorts every list so a plan (and the transaction) is deterministic.
func (t *table) finish(p *plan) {
	for k, d := range p.hairpinDelta {
		before := t.hairpin[k]
		after := before + d
		switch {
		case before == 0 && after > 0:
			p.elemAdd = append(p.elemAdd, elemOp{elemRef{setHairpin, k}, elemVal{}, mHairpin})
		case before > 0 && after == 0:
			p.elemDel = append(p.elemDel, elemOp{elemRef{setHairpin, k}, elemVal{}, mHairpin})
		}
	}
	for name, d := range p.lbDelta {
		before := t.lbs[name]
		after := before + d
		switch {
		case before == 0 && after > 0:
			p.newChains = append(p.newChains, name)
			p.rewrites = append(p.rewrites, name)
			p.chainRules[name] = p.lbDefs[name].rules()
		case before > 0 && after == 0:
			p.delChains = append(p.delChains, name)
		}
	}
	sort.Strings(p.newChains)
	sort.Strings(p.rewrites)
	sort.Strings(p.delChains)
	sortOps(p.elemDel)
	sortOps(p.elemAdd)
}

// commit records a plan as programmed.
func (t *table) commit(p *plan) {
	for k, d := range p.hairpinDelta {
		if n := t.hairpin[k] + d; n > 0 {
			t.hairpin[k] = n
		} else {
			delete(t.hairpin, k)
		}
	}
	for name, d := range p.lbDelta {
		if n := t.lbs[name] + d; n > 0 {
			t.lbs[name] = n
		} else {
			delete(t.lbs, name)
		}
	}
	for key, f := range p.next {
		if f == nil || (len(f.chains) == 0 && len(f.elems) == 0 && len(f.groups) == 0) {
			delete(t.frags, key)
		} else {
			t.frags[key] = f
		}
	}
	t.initialized = true
}

// compareOps orders element operations by map, then key.
func compareOps(a, b elemOp) int {
	if c := strings.Compare(a.ref.m, b.ref.m); c != 0 {
		return c
	}
	x, y := a.ref.key, b.ref.key
	if c := x.addr.Compare(y.addr); c != 0 {
		return c
	}
	if c := cmp.Compare(x.proto, y.proto); c != 0 {
		return c
	}
	if c := cmp.Compare(x.port, y.port); c != 0 {
		return c
	}
	if c := cmp.Compare(x.slot, y.slot); c != 0 {
		return c
	}
	return x.addr2.Compare(y.addr2)
}

func equalRules(a, b []rule) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package nftables

import (
	"fmt"
	"sort"
	"strings"
)

// render prints the table as nft-like text, sorted, with "@nh" standing for
// the family's network header ("ip" or "ip6"). It is what the golden files
// hold and what a reader compares with `nft list table`.
func (t *table) render() string {
	chains := map[string][]rule{}
	hooks := map[string]*hook{}
	for name, c := range t.baseChains {
		chains[name], hooks[name] = c.rules, c.hook
	}
	maps := map[string]mapDef{}
	for name, d := range t.baseMaps {
		maps[name] = d
	}
	elems := map[string][]string{}
	for _, f := range t.frags {
		for name, r := range f.chains {
			chains[name] = r
		}
		for name, d := range f.lbs {
			chains[name] = d.rules()
		}
		for ref, v := range f.all() {
			e := ref.key.render(maps[ref.m].kind)
			if s := v.render(); s != "" {
				e += " : " + s
			}
			elems[ref.m] = append(elems[ref.m], e)
		}
	}
	for k := range t.hairpin {
		elems[setHairpin] = append(elems[setHairpin], k.render(mHairpin))
	}
	nh := t.fam.String()
	var b strings.Builder
	fmt.Fprintf(&b, "table %s %s {\n", t.fam, TableName)
	for _, name := range sortedKeys(maps) {
		d := maps[name]
		fmt.Fprintf(&b, "\tmap %s { # %s", name, kindName(d.kind))
		if d.timeout > 0 {
			fmt.Fprintf(&b, ", timeout %s", d.timeout)
		}
		b.WriteString("\n")
		es := elems[name]
		sort.Strings(es)
		for _, e := range es {
			fmt.Fprintf(&b, "\t\t%s\n", e)
		}
		b.WriteString("\t}\n")
	}
	for _, name := range sortedKeys(chains) {
		fmt.Fprintf(&b, "\tchain %s {\n", name)
		if h := hooks[name]; h != nil {
			typ := "filter"
			if h.nat {
				typ = "nat"
			}
			fmt.Fprintf(&b, "\t\ttype %s hook %s priority %d\n", typ, h.hooknum, h.priority)
		}
		for _, r := range chains[name] {
			fmt.Fprintf(&b, "\t\t%s\n", strings.ReplaceAll(r.String(), "@nh", nh))
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func kindName(k mapKind) string {
	switch k {
	case mServiceIPs:
		return "addr . proto . port : verdict"
	case mServiceNodePorts:
		return "proto . port : verdict"
	case mEndpoints:
		return "addr . proto . port . slot : addr . port"
	case mNodePortEndpoints:
		return "proto . port . slot : addr . port"
	case mAffinity:
		return "dynamic addr . proto . port . client addr : slot"
	case mNodePortAffinity:
		return "dynamic proto . port . client addr : slot"
	case mHairpin:
		return "set addr . addr"
	}
	return "?"
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

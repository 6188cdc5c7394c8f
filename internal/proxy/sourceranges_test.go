package proxy

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestSourceRanges(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name  string
		specs []string
		want  map[Family][]netip.Prefix
	}{
		{"none", nil, map[Family][]netip.Prefix{}},
		{"by family, trimmed and masked", []string{" 10.0.0.0/8", "192.168.1.7/24 ", "2001:db8::1/32"},
			map[Family][]netip.Prefix{IPv4: {p("10.0.0.0/8"), p("192.168.1.0/24")}, IPv6: {p("2001:db8::/32")}}},
		{"unparsable ignored", []string{"10.0.0.0", "bogus", "10.0.0.0/33", "::ffff:10.0.0.0/104", "fe80::%eth0/64", "10.1.0.0/16"},
			map[Family][]netip.Prefix{IPv4: {p("10.1.0.0/16")}}},
		{"all addresses: no filtering in that family only", []string{"10.0.0.0/8", "0.0.0.0/0", "2001:db8::/32"},
			map[Family][]netip.Prefix{IPv6: {p("2001:db8::/32")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sourceRanges(tc.specs); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sourceRanges(%q) = %v, want %v", tc.specs, got, tc.want)
			}
		})
	}
}

// FuzzSourceRanges: whatever a Service carries, the ranges are masked,
// of the family they are filed under, and never all addresses.
func FuzzSourceRanges(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8", " 0.0.0.0/0", "::/0", "2001:db8::/32,10.0.0.1/32", "::ffff:1.2.3.4/120", "1.2.3.4/33", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for fam, ps := range sourceRanges(strings.Split(in, ",")) {
			for _, p := range ps {
				if !p.IsValid() || p != p.Masked() || FamilyOf(p.Addr()) != fam || p.Bits() == 0 {
					t.Fatalf("%q: %v filed under %v", in, p, fam)
				}
			}
		}
	})
}

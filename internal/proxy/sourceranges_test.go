package proxy

import (
	"context"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSourceRanges(t *testing.T) {
	p := netip.MustParsePrefix
	for _, tc := range []struct {
		name  string
		specs []string
		want  map[Family][]netip.Prefix
	}{
		{"none", nil, nil},
		{"empty", []string{}, nil},
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

func TestSourceRangesAllowTheNode(t *testing.T) {
	p, be, _ := newTestProxier(t)
	lb := svc("lb", 5, v1.ServicePort{Name: "http", Port: 80, NodePort: 30005, Protocol: v1.ProtocolTCP}, v1.ServicePort{Name: "https", Port: 443, NodePort: 30006, Protocol: v1.ProtocolTCP})
	lb.Spec.Type = v1.ServiceTypeLoadBalancer
	lb.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.1"}}
	p.OnService(key("lb"), lb)
	ranges := func() []string {
		t.Helper()
		p.Sync(context.Background())
		v := be.programs[key("lb")]
		if v == nil || len(v.Ports) != 2 {
			t.Fatalf("view %+v", v)
		}
		var out []string
		for _, r := range v.Ports[0].SourceRanges {
			out = append(out, r.String())
		}
		if !slices.Equal(v.Ports[0].SourceRanges, v.Ports[1].SourceRanges) {
			t.Fatalf("ports' ranges differ: %v, %v", v.Ports[0].SourceRanges, v.Ports[1].SourceRanges)
		}
		return out
	}
	node := func(ip string) *v1.Node {
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}, {Type: v1.NodeInternalIP, Address: ip}}}}
	}
	if got := ranges(); !slices.Equal(got, []string{"10.0.0.0/8"}) {
		t.Fatalf("node unknown: %v", got)
	}
	p.OnNode(node("192.168.0.5"))
	if got := ranges(); !slices.Equal(got, []string{"10.0.0.0/8"}) {
		t.Fatalf("node outside the ranges: %v", got)
	}
	p.OnNode(node("10.0.0.5"))
	if got := ranges(); !slices.Equal(got, []string{"10.0.0.0/8", "198.51.100.1/32"}) {
		t.Fatalf("node inside the ranges: %v", got)
	}
}

package proxy

import (
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEndpointsForSortsAndDeduplicates(t *testing.T) {
	sp := &ServicePort{Name: ServicePortName{Port: "http", Protocol: v1.ProtocolTCP}, Family: IPv4}
	type ep struct {
		addr  string
		ready bool
		node  string
	}
	slice := func(name string, eps ...ep) *discovery.EndpointSlice {
		s := &discovery.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, AddressType: discovery.AddressTypeIPv4,
			Ports: []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}
		for _, e := range eps {
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{e.addr},
				Conditions: discovery.EndpointConditions{Ready: ptr.To(e.ready)}, NodeName: ptr.To(e.node)})
		}
		return s
	}
	for _, tc := range []struct {
		name   string
		slices []*discovery.EndpointSlice
		want   []ep // addr, ready, and node "me" for local
	}{
		{"in order", []*discovery.EndpointSlice{slice("a", ep{"10.0.0.1", true, "x"}, ep{"10.0.0.2", true, "me"})},
			[]ep{{"10.0.0.1", true, "x"}, {"10.0.0.2", true, "me"}}},
		{"out of order", []*discovery.EndpointSlice{slice("a", ep{"10.0.0.9", true, "x"}, ep{"10.0.0.10", false, "x"}, ep{"10.0.0.2", true, "x"})},
			[]ep{{"10.0.0.2", true, "x"}, {"10.0.0.9", true, "x"}, {"10.0.0.10", false, "x"}}},
		// Copies side by side in order: the first ready copy wins.
		{"copies in order", []*discovery.EndpointSlice{slice("a", ep{"10.0.0.1", false, "x"}, ep{"10.0.0.1", true, "me"}, ep{"10.0.0.1", true, "y"})},
			[]ep{{"10.0.0.1", true, "me"}}},
		{"copies across slices", []*discovery.EndpointSlice{
			slice("a", ep{"10.0.0.3", true, "x"}, ep{"10.0.0.1", false, "x"}),
			slice("b", ep{"10.0.0.1", true, "me"}, ep{"10.0.0.3", false, "me"})},
			[]ep{{"10.0.0.1", true, "me"}, {"10.0.0.3", true, "x"}}},
		{"none", []*discovery.EndpointSlice{slice("a")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := endpointsFor(sp, tc.slices, "me")
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Addr != netip.MustParseAddr(w.addr) || g.Port != 8080 || g.Ready != w.ready || g.Local != (w.node == "me") {
					t.Fatalf("endpoint %d: got %v ready %t local %t, want %v", i, g, g.Ready, g.Local, w)
				}
			}
		})
	}
}

package nftables

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// FuzzProgram feeds Services and EndpointSlices with arbitrary field values
// (as a buggy or hostile client could store them) through the proxier and
// the rule computer: nothing may panic, and every programmed map element
// must render.
func FuzzProgram(f *testing.F) {
	f.Add("10.96.0.1", "", int32(80), int32(30080), "TCP", "10.244.0.1", int32(8080), "", true, false, "")
	f.Add("fd00::1", "10.96.0.2", int32(53), int32(0), "UDP", "fd00::5", int32(53), "fd00::9", false, true, "ClientIP")
	f.Add("None", "", int32(-1), int32(70000), "SCTP", "not-an-ip", int32(0), "1.2.3.4", true, true, "ClientIP")
	f.Fuzz(func(t *testing.T, clusterIP, secondIP string, port, nodePort int32, proto, epIP string, epPort int32, extIP string, etpLocal, itpLocal bool, affinity string) {
		h := newHarness(t, Config{})
		s := service("ns", "s", clusterIP, []v1.ServicePort{{Name: "p", Port: port, NodePort: nodePort, Protocol: v1.Protocol(proto)}}, func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeLoadBalancer
			if secondIP != "" {
				s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, secondIP)
			}
			if extIP != "" {
				s.Spec.ExternalIPs = []string{extIP}
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: extIP}}
			}
			if etpLocal {
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			}
			if itpLocal {
				s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
			}
			s.Spec.SessionAffinity = v1.ServiceAffinity(affinity)
		})
		h.svc(s)
		at := discovery.AddressTypeIPv4
		if strings.Contains(epIP, ":") {
			at = discovery.AddressTypeIPv6
		}
		h.eps(slice("ns", "s", "s-1", at, "p", epPort, v1.Protocol(proto), readyEP(epIP, testNode), ep{ip: epIP, node: "x", serving: true, terminate: true}))
		h.p.Sync(context.Background())
		for _, fam := range []proxy.Family{proxy.IPv4, proxy.IPv6} {
			if out := h.b.Render(fam); !strings.HasPrefix(out, "table ") {
				t.Fatalf("render: %q", out)
			}
		}
		// And removing everything leaves only the base table.
		h.p.OnService(types.NamespacedName{Namespace: "ns", Name: "s"}, nil)
		h.p.OnEndpointSlice(slice("ns", "s", "s-1", at, "p", epPort, v1.Protocol(proto)), true)
		h.p.Sync(context.Background())
		for _, tb := range h.b.tables {
			if len(tb.frags) != 0 || len(tb.hairpin) != 0 {
				t.Fatalf("state left after deleting everything: %d fragments, %d hairpin elements", len(tb.frags), len(tb.hairpin))
			}
		}
	})
}

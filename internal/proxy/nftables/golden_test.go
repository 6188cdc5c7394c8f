package nftables

import (
	"context"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const testNode = "node-a"

type svcOpt func(*v1.Service)

func service(ns, name, ip string, ports []v1.ServicePort, opts ...svcOpt) *v1.Service {
	s := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1700000000, 0))},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip}, Ports: ports},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func tcp(name string, port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: port, NodePort: nodePort, Protocol: v1.ProtocolTCP}
}

type ep struct {
	ip, node                  string
	ready, serving, terminate bool
	zones                     []string
}

func readyEP(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }

func slice(ns, svc, name string, family discovery.AddressType, portName string, port int32, proto v1.Protocol, eps ...ep) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discovery.LabelServiceName: svc}},
		AddressType: family,
		Ports:       []discovery.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		d := discovery.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminate)}}
		if len(e.zones) > 0 {
			d.Hints = &discovery.EndpointHints{}
			for _, z := range e.zones {
				d.Hints.ForZones = append(d.Hints.ForZones, discovery.ForZone{Name: z})
			}
		}
		s.Endpoints = append(s.Endpoints, d)
	}
	return s
}

// harness is a Proxier over a dry-run backend, synced by hand.
type harness struct {
	p *proxy.Proxier
	b *Backend
}

func newHarness(t testing.TB, cfg Config) *harness {
	b := NewDryRun(cfg)
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: cfg.Families, Backend: b, FullSyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	return &harness{p: p, b: b}
}

func (h *harness) svc(s *v1.Service) {
	h.p.OnService(types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, s)
}

func (h *harness) eps(s *discovery.EndpointSlice) { h.p.OnEndpointSlice(s, false) }

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the computed rules (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestGoldenRules(t *testing.T) {
	v4 := discovery.AddressTypeIPv4
	cases := []struct {
		name  string
		cfg   Config
		setup func(h *harness)
	}{
		{"clusterip", Config{Families: []proxy.Family{proxy.IPv4}, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}, func(h *harness) {
			h.svc(service("default", "web", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 0)}))
			h.eps(slice("default", "web", "web-1", v4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.1.2", "node-b"), readyEP("10.244.1.3", "node-c"),
				ep{ip: "10.244.1.4", node: "node-c", ready: false, serving: true, terminate: true}))
		}},
		{"nodeport-local", Config{Families: []proxy.Family{proxy.IPv4}}, func(h *harness) {
			h.svc(service("default", "np", "10.96.0.11", []v1.ServicePort{tcp("http", 80, 30080)}, func(s *v1.Service) {
				s.Spec.Type = v1.ServiceTypeLoadBalancer
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				s.Spec.ExternalIPs = []string{"192.0.2.1"}
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.7"}, {IP: "198.51.100.8", IPMode: ptr.To(v1.LoadBalancerIPModeProxy)}}
			}))
			h.eps(slice("default", "np", "np-1", v4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.0.5", testNode), readyEP("10.244.1.5", "node-b")))
		}},
		{"internal-local-no-local-endpoints", Config{Families: []proxy.Family{proxy.IPv4}}, func(h *harness) {
			h.svc(service("default", "itp", "10.96.0.12", []v1.ServicePort{tcp("", 80, 0)}, func(s *v1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
			}))
			h.eps(slice("default", "itp", "itp-1", v4, "", 80, v1.ProtocolTCP, readyEP("10.244.1.9", "node-b")))
		}},
		{"affinity-udp-terminating", Config{Families: []proxy.Family{proxy.IPv4}}, func(h *harness) {
			h.svc(service("kube-system", "dns", "10.96.0.53", []v1.ServicePort{{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}}, func(s *v1.Service) {
				s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](600)}}
			}))
			// No ready endpoint: the serving terminating one is used.
			h.eps(slice("kube-system", "dns", "dns-1", v4, "dns", 53, v1.ProtocolUDP,
				ep{ip: "10.244.2.2", node: "node-b", serving: true, terminate: true}, ep{ip: "10.244.2.3", node: "node-b"}))
		}},
		{"no-endpoints-and-topology", Config{Families: []proxy.Family{proxy.IPv4}}, func(h *harness) {
			h.svc(service("default", "empty", "10.96.0.20", []v1.ServicePort{tcp("http", 80, 30020)}, func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }))
			h.svc(service("default", "zoned", "10.96.0.21", []v1.ServicePort{tcp("http", 80, 0)}))
			// The node has no zone label: hints are ignored, all ready endpoints used.
			h.eps(slice("default", "zoned", "zoned-1", v4, "http", 80, v1.ProtocolTCP,
				ep{ip: "10.244.3.1", node: "node-b", ready: true, serving: true, zones: []string{"z1"}},
				ep{ip: "10.244.3.2", node: "node-c", ready: true, serving: true, zones: []string{"z2"}}))
		}},
		{"loadbalancer-source-ranges", Config{Families: []proxy.Family{proxy.IPv4}}, func(h *harness) {
			h.svc(service("default", "fw", "10.96.0.40", []v1.ServicePort{tcp("http", 80, 30040)}, func(s *v1.Service) {
				s.Spec.Type = v1.ServiceTypeLoadBalancer
				s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				s.Spec.HealthCheckNodePort = 32040
				s.Spec.ExternalIPs = []string{"192.0.2.40"} // not a load balancer IP: not filtered
				s.Spec.LoadBalancerSourceRanges = []string{" 10.0.0.0/8", "192.168.1.7/24", "2001:db8::/32", "not-a-cidr"}
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.40"}, {IP: "198.51.100.41", IPMode: ptr.To(v1.LoadBalancerIPModeProxy)}}
			}))
			// Without endpoints the firewall still drops other sources first.
			h.svc(service("default", "fw-empty", "10.96.0.41", []v1.ServicePort{tcp("http", 80, 0)}, func(s *v1.Service) {
				s.Spec.Type = v1.ServiceTypeLoadBalancer
				s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.42"}}
			}))
			// A range of every address filters nothing.
			h.svc(service("default", "fw-open", "10.96.0.42", []v1.ServicePort{tcp("http", 80, 0)}, func(s *v1.Service) {
				s.Spec.Type = v1.ServiceTypeLoadBalancer
				s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "0.0.0.0/0"}
				s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "198.51.100.43"}}
			}))
			h.eps(slice("default", "fw", "fw-1", v4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.0.40", testNode), readyEP("10.244.1.40", "node-b")))
			h.eps(slice("default", "fw-open", "fw-open-1", v4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.1.42", "node-b")))
		}},
		{"masquerade-all", Config{Families: []proxy.Family{proxy.IPv4}, MasqueradeAll: true, ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}, func(h *harness) {
			h.svc(service("default", "web", "10.96.0.50", []v1.ServicePort{tcp("http", 80, 0)}))
			h.eps(slice("default", "web", "web-1", v4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.1.50", "node-b")))
		}},
		{"dual-stack", Config{}, func(h *harness) {
			h.svc(service("default", "ds", "10.96.0.30", []v1.ServicePort{tcp("http", 80, 0)}, func(s *v1.Service) {
				s.Spec.ClusterIPs = []string{"10.96.0.30", "fd00::30"}
			}))
			h.eps(slice("default", "ds", "ds-v4", v4, "http", 80, v1.ProtocolTCP, readyEP("10.244.4.1", "node-b")))
			h.eps(slice("default", "ds", "ds-v6", discovery.AddressTypeIPv6, "http", 80, v1.ProtocolTCP, readyEP("fd00:244::1", "node-b")))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			tc.setup(h)
			h.p.Sync(context.Background())
			var out string
			for _, f := range h.b.cfg.Families {
				out += h.b.Render(f)
			}
			checkGolden(t, tc.name, out)
		})
	}
}

func TestTopologyZoneHints(t *testing.T) {
	h := newHarness(t, Config{Families: []proxy.Family{proxy.IPv4}})
	h.p.OnNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{v1.LabelTopologyZone: "z1"}}})
	h.svc(service("default", "zoned", "10.96.0.21", []v1.ServicePort{tcp("http", 80, 0)}))
	h.eps(slice("default", "zoned", "zoned-1", discovery.AddressTypeIPv4, "http", 80, v1.ProtocolTCP,
		ep{ip: "10.244.3.1", node: "node-b", ready: true, serving: true, zones: []string{"z1"}},
		ep{ip: "10.244.3.2", node: "node-c", ready: true, serving: true, zones: []string{"z2"}}))
	h.p.Sync(context.Background())
	got := h.b.Render(proxy.IPv4)
	if !strings.Contains(got, "0 : 10.244.3.1 . 80") || strings.Contains(got, "10.244.3.2 . 80") {
		t.Fatalf("zone z1 should use only the z1-hinted endpoint:\n%s", got)
	}
}

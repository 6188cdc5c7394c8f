package nftables

import (
	"context"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/proxy/netlab"
)

// TestIPv6TrafficThroughNetNS is the IPv6 half of dual-stack end to end: a
// dual-stack Service reached on its IPv6 cluster IP and node port from the
// client namespace, balanced over IPv6 endpoints.
func TestIPv6TrafficThroughNetNS(t *testing.T) {
	lab := netlab.New(t, 2)
	for _, b := range lab.Backends(2) {
		lab.Serve(b, 8080)
	}
	fd, err := os.Open("/var/run/netns/" + lab.NS("node"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := New(Config{NetNSFd: int(fd.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := proxy.New(proxy.Config{NodeName: testNode, Backend: b, FullSyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	p.OnService(types.NamespacedName{Namespace: "default", Name: "web"}, service("default", "web", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 30080)},
		func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeNodePort
			s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00:96::10"}
		}))
	p.OnEndpointSlice(slice("default", "web", "web-6", discovery.AddressTypeIPv6, "http", 8080, v1.ProtocolTCP,
		readyEP("fd00:11:1::2", "node-b"), readyEP("fd00:11:2::2", "node-b")), false)
	p.OnEndpointSlice(slice("default", "web", "web-4", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP,
		readyEP("10.1.1.2", "node-b")), false)
	p.Sync(context.Background())

	deadline := time.Now().Add(5 * time.Second)
	for lab.Who("tcp6", "[fd00:96::10]:80") == "" {
		if time.Now().After(deadline) {
			t.Fatalf("IPv6 cluster IP does not answer:\n%s", b.Render(proxy.IPv6))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := lab.Tally("tcp6", "[fd00:96::10]:80", 30); got["be1"] < 3 || got["be2"] < 3 || got["be1"]+got["be2"] != 30 {
		t.Fatalf("IPv6 cluster IP: %v, want both backends", got)
	}
	if got := lab.Tally("tcp6", "[fd00:10::1]:30080", 6); got["be1"]+got["be2"] != 6 {
		t.Fatalf("IPv6 node port from the client: %v", got)
	}
	if got := lab.Tally("tcp4", "10.96.0.10:80", 6); got["be1"] != 6 {
		t.Fatalf("the same Service's IPv4 side: %v, want be1 only", got)
	}
}

package nftables

import (
	"context"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/proxy/netlab"
)

// TestLoadBalancerSourceRangesNetNS sends traffic to a load balancer IP
// from two namespaces, one inside spec.loadBalancerSourceRanges and one
// outside: the first reaches the backend, the second is dropped, and the
// node port (not subject to the ranges, as upstream's is not) answers both.
func TestLoadBalancerSourceRangesNetNS(t *testing.T) {
	lab := netlab.New(t, 2)
	lab.Serve("be1", 8080)
	fd, err := os.Open("/var/run/netns/" + lab.NS("node"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd()), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: b,
		MinSyncPeriod: 20 * time.Millisecond, FullSyncPeriod: -1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	lb := func(ranges ...string) *v1.Service {
		return service("default", "lb", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 30010)}, func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeLoadBalancer
			s.Spec.LoadBalancerSourceRanges = ranges
			s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "192.0.2.10"}}
		})
	}
	key := types.NamespacedName{Namespace: "default", Name: "lb"}
	p.OnService(key, lb("10.0.0.0/24")) // the client namespace's link
	p.OnEndpointSlice(slice("default", "lb", "lb-1", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, readyEP("10.1.1.2", "node-b")), false)
	p.SetSynced()

	// fromBE2 asks addr from the second backend's namespace (10.1.2.2).
	fromBE2 := func(addr string) string {
		var who string
		lab.Exec("be2", func() error {
			c, err := net.DialTimeout("tcp4", addr, 500*time.Millisecond)
			if err != nil {
				return nil
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Second))
			buf := make([]byte, 16)
			n, _ := c.Read(buf)
			who = string(buf[:n])
			return nil
		})
		return who
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 3s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("the allowed client reaches the load balancer IP", func() bool { return lab.Who("tcp4", "192.0.2.10:80") == "be1" })
	if got := fromBE2("192.0.2.10:80"); got != "" {
		t.Fatalf("a source outside the ranges reached the load balancer IP: %q", got)
	}
	if got := fromBE2("10.1.2.1:30010"); got != "be1\n" {
		t.Fatalf("the node port from outside the ranges: %q, want be1", got)
	}

	// The ranges change: the other source is allowed, the first denied.
	p.OnService(key, lb(" 10.1.2.0/24"))
	wait("the newly allowed source reaches the load balancer IP", func() bool { return fromBE2("192.0.2.10:80") == "be1\n" })
	if got := lab.Who("tcp4", "192.0.2.10:80"); got != "" {
		t.Fatalf("the client outside the new ranges reached the load balancer IP: %q", got)
	}

	// No ranges: everyone.
	p.OnService(key, lb())
	wait("without ranges the client reaches it again", func() bool { return lab.Who("tcp4", "192.0.2.10:80") == "be1" })
}

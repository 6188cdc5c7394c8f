package nftables

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	gnft "github.com/google/nftables"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/proxy/netlab"
)

func TestTrafficThroughNetNS(t *testing.T) {
	lab := netlab.New(t, 3)
	for _, b := range lab.Backends(3) {
		lab.Serve(b, 8080)
	}
	fd, err := os.Open("/var/run/netns/" + lab.NS("node"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd()), Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: b,
		MinSyncPeriod: 50 * time.Millisecond, FullSyncPeriod: -1, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()

	v4 := discovery.AddressTypeIPv4
	web := service("default", "web", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 30080), {Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}},
		func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort })
	p.OnService(types.NamespacedName{Namespace: "default", Name: "web"}, web)
	webEPs := func(ips ...string) {
		var eps []ep
		for _, ip := range ips {
			eps = append(eps, readyEP(ip, "node-b"))
		}
		s := slice("default", "web", "web-1", v4, "http", 8080, v1.ProtocolTCP, eps...)
		s.Ports = append(s.Ports, slice("default", "web", "x", v4, "dns", 8080, v1.ProtocolUDP).Ports...)
		p.OnEndpointSlice(s, false)
	}
	webEPs("10.1.1.2", "10.1.2.2")
	p.SetSynced()

	waitFor := func(t *testing.T, what string, within time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				t.Fatalf("%s: not within %s", what, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor(t, "cluster IP answers", 5*time.Second, func() bool { return lab.Who("tcp4", "10.96.0.10:80") != "" })

	t.Run("balanced", func(t *testing.T) {
		got := lab.Tally("tcp4", "10.96.0.10:80", 40)
		if got["be1"] < 5 || got["be2"] < 5 || got["be1"]+got["be2"] != 40 {
			t.Fatalf("40 connections spread %v, want both be1 and be2", got)
		}
	})
	t.Run("udp", func(t *testing.T) {
		got := lab.Tally("udp4", "10.96.0.10:53", 20)
		if got["be1"]+got["be2"] != 20 {
			t.Fatalf("UDP answers %v", got)
		}
	})
	t.Run("nodeport-from-outside", func(t *testing.T) {
		got := lab.Tally("tcp4", "10.0.0.1:30080", 10)
		if got["be1"]+got["be2"] != 10 {
			t.Fatalf("NodePort answers %v", got)
		}
	})

	// An established connection must survive unrelated updates and an
	// endpoint change (conntrack keeps its NAT).
	est, err := lab.Dial("tcp4", "10.96.0.10:80")
	if err != nil {
		t.Fatal(err)
	}
	defer est.Close()
	estR := bufio.NewReader(est)
	_ = est.SetDeadline(time.Now().Add(20 * time.Second))
	owner, err := estR.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	owner = strings.TrimSpace(owner)

	t.Run("endpoint-change-within-a-second", func(t *testing.T) {
		webEPs("10.1.2.2", "10.1.3.2") // be1 out, be3 in
		d := waitFor(t, "traffic follows the endpoint change", time.Second, func() bool {
			got := lab.Tally("tcp4", "10.96.0.10:80", 12)
			return got["be1"] == 0 && got["be2"] > 0 && got["be3"] > 0 && got["be2"]+got["be3"] == 12
		})
		t.Logf("traffic followed the endpoint change in %s", d)
	})

	t.Run("session-affinity", func(t *testing.T) {
		sticky := service("default", "sticky", "10.96.0.11", []v1.ServicePort{tcp("http", 80, 0)}, func(s *v1.Service) {
			s.Spec.SessionAffinity = v1.ServiceAffinityClientIP
		})
		p.OnService(types.NamespacedName{Namespace: "default", Name: "sticky"}, sticky)
		p.OnEndpointSlice(slice("default", "sticky", "sticky-1", v4, "http", 8080, v1.ProtocolTCP,
			readyEP("10.1.1.2", "node-b"), readyEP("10.1.2.2", "node-b"), readyEP("10.1.3.2", "node-b")), false)
		waitFor(t, "sticky service answers", 2*time.Second, func() bool { return lab.Who("tcp4", "10.96.0.11:80") != "" })
		got := lab.Tally("tcp4", "10.96.0.11:80", 20)
		if len(got) != 1 || got[""] != 0 {
			t.Fatalf("ClientIP affinity: 20 connections went to %v, want one backend", got)
		}
	})

	t.Run("established-connection-survives", func(t *testing.T) {
		p.OnService(types.NamespacedName{Namespace: "default", Name: "other"}, service("default", "other", "10.96.0.99", []v1.ServicePort{tcp("http", 80, 0)}))
		time.Sleep(200 * time.Millisecond)
		if _, err := fmt.Fprintf(est, "ping\n"); err != nil {
			t.Fatal(err)
		}
		line, err := estR.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, owner+" ping") {
			t.Fatalf("established connection to %s after updates: %q, %v", owner, line, err)
		}
	})

	t.Run("no-endpoints-rejects", func(t *testing.T) {
		waitFor(t, "service without endpoints is rejected", 2*time.Second, func() bool {
			c, err := lab.Dial("tcp4", "10.96.0.99:80")
			if c != nil {
				c.Close()
			}
			return err != nil && strings.Contains(err.Error(), "refused")
		})

	})

	t.Run("stale-udp-flow-cleared", func(t *testing.T) {
		// A client keeps its UDP socket (same 5-tuple, same conntrack
		// entry); the endpoint it talks to is removed; the next datagram
		// must reach a remaining endpoint, not the removed one.
		webEPs("10.1.2.2", "10.1.3.2")
		time.Sleep(200 * time.Millisecond)
		c, err := lab.Dial("udp4", "10.96.0.10:53")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ask := func() string {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			if _, err := c.Write([]byte("hi")); err != nil {
				return ""
			}
			buf := make([]byte, 64)
			n, err := c.Read(buf)
			if err != nil {
				return ""
			}
			return string(buf[:n])
		}
		first := ask()
		if first != "be2" && first != "be3" {
			t.Fatalf("first answer %q", first)
		}
		other := map[string]string{"be2": "10.1.3.2", "be3": "10.1.2.2"}[first]
		webEPs(other)
		time.Sleep(300 * time.Millisecond)
		if got := ask(); got == first || got == "" {
			t.Fatalf("after %s was removed the same UDP socket got %q", first, got)
		}
	})

	t.Run("failed-transaction-falls-back-to-rewrite", func(t *testing.T) {
		// Someone deletes the endpoint elements behind the proxy's back: the
		// next incremental transaction (which deletes one of them) fails as
		// a whole, and the backend rewrites the tables instead.
		webEPs("10.1.2.2", "10.1.3.2")
		waitFor(t, "both backends answer", time.Second, func() bool {
			got := lab.Tally("tcp4", "10.96.0.10:80", 12)
			return got["be2"] > 0 && got["be3"] > 0
		})
		c, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd())})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		k := c.w.(*kernel)
		k.conn.FlushSet(&gnft.Set{Table: nftTable(proxy.IPv4), Name: mapEndpoints})
		if err := k.conn.Flush(); err != nil {
			t.Fatal(err)
		}
		webEPs("10.1.1.2", "10.1.3.2") // be2 → be1: deletes an element that is gone
		waitFor(t, "traffic after the failed transaction", 2*time.Second, func() bool {
			got := lab.Tally("tcp4", "10.96.0.10:80", 12)
			return got["be1"] > 0 && got["be3"] > 0 && got["be1"]+got["be3"] == 12
		})
	})

	t.Run("full-resync-repairs-drift", func(t *testing.T) {
		// Someone flushes the table behind the proxy's back.
		c, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd())})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		k := c.w.(*kernel)
		k.conn.FlushTable(nftTable(proxy.IPv4))
		if err := k.conn.Flush(); err != nil {
			t.Fatal(err)
		}
		if lab.Who("tcp4", "10.96.0.10:80") != "" {
			t.Fatal("flushed table still forwards")
		}
		if _, err := b.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if lab.Who("tcp4", "10.96.0.10:80") == "" {
			t.Fatal("resync did not repair the flushed table")
		}
	})
}

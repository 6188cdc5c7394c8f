package nftables

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// netLab is a "node" namespace routing between a client namespace and
// backend namespaces, all joined by veth pairs.
type netLab struct {
	t      *testing.T
	prefix string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newNetLab(t *testing.T, backends int) *netLab {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and nf_tables")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	l := &netLab{t: t, prefix: fmt.Sprintf("mp%d", os.Getpid()%100000)}
	if out, err := exec.Command("ip", "netns", "add", l.ns("node")).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable: %v: %s", err, out)
	}
	t.Cleanup(func() {
		for _, n := range append([]string{"node", "client"}, l.backendNames(backends)...) {
			_ = exec.Command("ip", "netns", "del", l.ns(n)).Run()
		}
	})
	ipCmd(t, "-n", l.ns("node"), "link", "set", "lo", "up")
	if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0); err != nil {
		t.Log("host ip_forward:", err)
	}
	l.attach("client", "10.0.0.1", "10.0.0.2")
	for i, b := range l.backendNames(backends) {
		l.attach(b, fmt.Sprintf("10.1.%d.1", i+1), fmt.Sprintf("10.1.%d.2", i+1))
	}
	// A node has a default route (here: through the first backend's link);
	// without one, traffic to a cluster IP that is not DNATed fails routing
	// before the filter hooks see it.
	ipCmd(t, "-n", l.ns("node"), "route", "add", "default", "via", "10.1.1.2")
	l.exec("node", func() error { return os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0) })
	return l
}

func (l *netLab) ns(n string) string { return l.prefix + "-" + n }

func (l *netLab) backendNames(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("be%d", i))
	}
	return out
}

// attach creates namespace n joined to the node by a /24 veth pair.
func (l *netLab) attach(n, nodeIP, peerIP string) {
	t := l.t
	ipCmd(t, "netns", "add", l.ns(n))
	a, b := l.prefix+n+"n", l.prefix+n+"p"
	ipCmd(t, "link", "add", a, "netns", l.ns("node"), "type", "veth", "peer", "name", b, "netns", l.ns(n))
	ipCmd(t, "-n", l.ns("node"), "addr", "add", nodeIP+"/24", "dev", a)
	ipCmd(t, "-n", l.ns("node"), "link", "set", a, "up")
	ipCmd(t, "-n", l.ns(n), "addr", "add", peerIP+"/24", "dev", b)
	ipCmd(t, "-n", l.ns(n), "link", "set", b, "up")
	ipCmd(t, "-n", l.ns(n), "link", "set", "lo", "up")
	ipCmd(t, "-n", l.ns(n), "route", "add", "default", "via", nodeIP)
}

// exec runs fn with the calling thread in namespace n: sockets fn creates
// stay in n afterwards.
func (l *netLab) exec(n string, fn func() error) {
	l.t.Helper()
	if err := inNetNS("/var/run/netns/"+l.ns(n), fn); err != nil {
		l.t.Fatalf("in %s: %v", n, err)
	}
}

func inNetNS(path string, fn func() error) error {
	runtime.LockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	target, err := os.Open(path)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns: %w", err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked and dies with its goroutine rather than
		// run other goroutines in the wrong namespace.
		return fmt.Errorf("restoring netns: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// serve starts a TCP server (greets with name, then echoes lines) and a
// UDP server (answers every datagram with name) in namespace n.
func (l *netLab) serve(n string, port int) {
	var tl net.Listener
	var ul net.PacketConn
	l.exec(n, func() (err error) {
		if tl, err = net.Listen("tcp4", fmt.Sprintf(":%d", port)); err != nil {
			return err
		}
		ul, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	})
	l.t.Cleanup(func() { tl.Close(); ul.Close() })
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintf(c, "%s\n", n)
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					fmt.Fprintf(c, "%s %s", n, line)
				}
			}()
		}
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			_, addr, err := ul.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = ul.WriteTo([]byte(n), addr)
		}
	}()
}

// dial connects from the client namespace.
func (l *netLab) dial(network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetNS("/var/run/netns/"+l.ns("client"), func() (err error) {
		c, err = net.DialTimeout(network, addr, time.Second)
		return err
	})
	return c, err
}

// who asks addr which backend answers, "" on failure.
func (l *netLab) who(network, addr string) string {
	c, err := l.dial(network, addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if network == "udp4" {
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
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.TrimSpace(line)
}

func (l *netLab) tally(network, addr string, n int) map[string]int {
	out := map[string]int{}
	for i := 0; i < n; i++ {
		out[l.who(network, addr)]++
	}
	return out
}

func TestTrafficThroughNetNS(t *testing.T) {
	lab := newNetLab(t, 3)
	for _, b := range lab.backendNames(3) {
		lab.serve(b, 8080)
	}
	fd, err := os.Open("/var/run/netns/" + lab.ns("node"))
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: b,
		MinSyncPeriod: 50 * time.Millisecond, FullSyncPeriod: -1})
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
	waitFor(t, "cluster IP answers", 5*time.Second, func() bool { return lab.who("tcp4", "10.96.0.10:80") != "" })

	t.Run("balanced", func(t *testing.T) {
		got := lab.tally("tcp4", "10.96.0.10:80", 40)
		if got["be1"] < 5 || got["be2"] < 5 || got["be1"]+got["be2"] != 40 {
			t.Fatalf("40 connections spread %v, want both be1 and be2", got)
		}
	})
	t.Run("udp", func(t *testing.T) {
		got := lab.tally("udp4", "10.96.0.10:53", 20)
		if got["be1"]+got["be2"] != 20 {
			t.Fatalf("UDP answers %v", got)
		}
	})
	t.Run("nodeport-from-outside", func(t *testing.T) {
		got := lab.tally("tcp4", "10.0.0.1:30080", 10)
		if got["be1"]+got["be2"] != 10 {
			t.Fatalf("NodePort answers %v", got)
		}
	})

	// An established connection must survive unrelated updates and an
	// endpoint change (conntrack keeps its NAT).
	est, err := lab.dial("tcp4", "10.96.0.10:80")
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
			got := lab.tally("tcp4", "10.96.0.10:80", 12)
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
		waitFor(t, "sticky service answers", 2*time.Second, func() bool { return lab.who("tcp4", "10.96.0.11:80") != "" })
		got := lab.tally("tcp4", "10.96.0.11:80", 20)
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
			c, err := lab.dial("tcp4", "10.96.0.99:80")
			if c != nil {
				c.Close()
			}
			return err != nil && strings.Contains(err.Error(), "refused")
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
		if lab.who("tcp4", "10.96.0.10:80") != "" {
			t.Fatal("flushed table still forwards")
		}
		if _, err := b.Resync(context.Background()); err != nil {
			t.Fatal(err)
		}
		if lab.who("tcp4", "10.96.0.10:80") == "" {
			t.Fatal("resync did not repair the flushed table")
		}
	})
}

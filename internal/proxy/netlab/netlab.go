// Package netlab builds throwaway network namespaces for the proxy's
// tests: a "node" namespace routing between a client namespace (10.0.0.2,
// node side 10.0.0.1; fd00:10::2 and ::1) and backend namespaces be1..beN
// (10.1.N.2, fd00:11:N::2), with tiny
// TCP and UDP servers answering with their namespace's name. It needs root
// and iproute2; New skips the test otherwise.
package netlab

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Lab is a "node" namespace routing between a client namespace and
// backend namespaces, all joined by veth pairs.
type Lab struct {
	t      *testing.T
	prefix string
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// New creates the namespaces (removed when t ends).
func New(t *testing.T, backends int) *Lab {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces and nf_tables")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs the ip command (iproute2)")
	}
	l := &Lab{t: t, prefix: fmt.Sprintf("mp%d", os.Getpid()%100000)}
	if out, err := exec.Command("ip", "netns", "add", l.NS("node")).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable: %v: %s", err, out)
	}
	t.Cleanup(func() {
		for _, n := range append([]string{"node", "client"}, l.Backends(backends)...) {
			_ = exec.Command("ip", "netns", "del", l.NS(n)).Run()
		}
	})
	ipCmd(t, "-n", l.NS("node"), "link", "set", "lo", "up")
	l.attach("client", "10.0.0.1", "10.0.0.2", "fd00:10::1", "fd00:10::2")
	for i, b := range l.Backends(backends) {
		l.attach(b, fmt.Sprintf("10.1.%d.1", i+1), fmt.Sprintf("10.1.%d.2", i+1), fmt.Sprintf("fd00:11:%d::1", i+1), fmt.Sprintf("fd00:11:%d::2", i+1))
	}
	// A node has a default route (here: through the first backend's link);
	// without one, traffic to a cluster IP that is not DNATed fails routing
	// before the filter hooks see it.
	ipCmd(t, "-n", l.NS("node"), "route", "add", "default", "via", "10.1.1.2")
	ipCmd(t, "-n", l.NS("node"), "-6", "route", "add", "default", "via", "fd00:11:1::2")
	l.Exec("node", func() error {
		if err := os.WriteFile("/proc/sys/net/ipv4/ip_forward", []byte("1"), 0); err != nil {
			return err
		}
		return os.WriteFile("/proc/sys/net/ipv6/conf/all/forwarding", []byte("1"), 0)
	})
	return l
}

// NS is namespace n's full name (node, client, be1, ...).
func (l *Lab) NS(n string) string { return l.prefix + "-" + n }

// Backends names n backend namespaces.
func (l *Lab) Backends(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("be%d", i))
	}
	return out
}

// attach creates namespace n joined to the node by a veth pair with a /24
// and a /64 (no duplicate address detection, so addresses work at once).
func (l *Lab) attach(n, nodeIP, peerIP, nodeIP6, peerIP6 string) {
	t := l.t
	ipCmd(t, "netns", "add", l.NS(n))
	a, b := l.prefix+n+"n", l.prefix+n+"p"
	ipCmd(t, "link", "add", a, "netns", l.NS("node"), "type", "veth", "peer", "name", b, "netns", l.NS(n))
	ipCmd(t, "-n", l.NS("node"), "addr", "add", nodeIP+"/24", "dev", a)
	ipCmd(t, "-n", l.NS("node"), "link", "set", a, "up")
	ipCmd(t, "-n", l.NS(n), "addr", "add", peerIP+"/24", "dev", b)
	ipCmd(t, "-n", l.NS(n), "link", "set", b, "up")
	ipCmd(t, "-n", l.NS(n), "link", "set", "lo", "up")
	ipCmd(t, "-n", l.NS(n), "route", "add", "default", "via", nodeIP)
	ipCmd(t, "-n", l.NS("node"), "addr", "add", nodeIP6+"/64", "dev", a, "nodad")
	ipCmd(t, "-n", l.NS(n), "addr", "add", peerIP6+"/64", "dev", b, "nodad")
	ipCmd(t, "-n", l.NS(n), "-6", "route", "add", "default", "via", nodeIP6)
}

// Exec runs fn with the calling thread in namespace n: sockets fn creates
// stay in n afterwards.
func (l *Lab) Exec(n string, fn func() error) {
	l.t.Helper()
	if err := InNetNS("/var/run/netns/"+l.NS(n), fn); err != nil {
		l.t.Fatalf("in %s: %v", n, err)
	}
}

// InNetNS runs fn on a thread in the namespace at path.
func InNetNS(path string, fn func() error) error {
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

// Serve starts a TCP server (greets with name, then echoes lines) and a
// UDP server (answers every datagram with name) in namespace n.
func (l *Lab) Serve(n string, port int) {
	var tl net.Listener
	var ul net.PacketConn
	l.Exec(n, func() (err error) {
		if tl, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
			return err
		}
		ul, err = net.ListenPacket("udp", fmt.Sprintf(":%d", port))
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

// Dial connects from the client namespace.
func (l *Lab) Dial(network, addr string) (net.Conn, error) {
	var c net.Conn
	err := InNetNS("/var/run/netns/"+l.NS("client"), func() (err error) {
		c, err = net.DialTimeout(network, addr, time.Second)
		return err
	})
	return c, err
}

// Who asks addr which backend answers, "" on failure.
func (l *Lab) Who(network, addr string) string {
	c, err := l.Dial(network, addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if strings.HasPrefix(network, "udp") {
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

// Tally asks n times and counts the answers.
func (l *Lab) Tally(network, addr string, n int) map[string]int {
	out := map[string]int{}
	for i := 0; i < n; i++ {
		out[l.Who(network, addr)]++
	}
	return out
}

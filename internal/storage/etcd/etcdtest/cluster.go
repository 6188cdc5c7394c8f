package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Timing of the test members. An election timeout much below half a second
// makes a loaded 2-core CI machine (race detector, several test binaries)
// hold spurious elections; this one still elects a new leader in about a
// second after a kill.
const (
	tickMs     = 50
	electionMs = 500
	// readyTimeout bounds the wait for a member (or the cluster) to serve.
	readyTimeout = 30 * time.Second
)

// Cluster is a running etcd cluster of in-process members. Its methods may
// be called from the test goroutine only (they fail the test on error).
type Cluster struct {
	t       testing.TB
	token   string
	members []*member
	// tls, when set, makes members serve clients over TLS and require
	// client certificates signed by its CA.
	tls *TLSFiles

	mu sync.Mutex // guards every member's etcd field
}

type member struct {
	name               string
	dir                string
	peerURL, clientURL url.URL
	bridge             *bridge
	etcd               *embed.Etcd // nil while stopped
}

// TLSFiles are the PEM files of a TLS cluster: the members' serving
// certificate and key (valid for 127.0.0.1), the CA client certificates
// must chain to, and the client certificate Client presents.
type TLSFiles struct {
	CertFile, KeyFile, CAFile     string
	ClientCertFile, ClientKeyFile string
}

// Start runs a cluster of members members (1, 3 or 5 make sense), waits
// until it has a leader and every member serves, and stops it when the test
// ends.
func Start(t testing.TB, members int) *Cluster {
	t.Helper()
	return start(t, members, nil)
}

// StartTLS is Start with client connections over TLS, client certificates
// required (etcd's --client-cert-auth). Peers talk plain TCP.
func StartTLS(t testing.TB, members int, files TLSFiles) *Cluster {
	t.Helper()
	return start(t, members, &files)
}

func start(t testing.TB, members int, files *TLSFiles) *Cluster {
	t.Helper()
	if members < 1 {
		t.Fatalf("etcdtest.Start: %d members", members)
	}
	c := &Cluster{t: t, token: fmt.Sprintf("etcdtest-%d", time.Now().UnixNano()), tls: files}
	for i := range members {
		b, err := newBridge()
		if err != nil {
			t.Fatalf("etcdtest: bridge: %v", err)
		}
		c.members = append(c.members, &member{name: fmt.Sprintf("m%d", i), bridge: b})
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if lastErr = c.startAttempt(); lastErr == nil {
			break
		}
		// Another process took a port between picking and binding it
		// (the machine is shared): pick new ones.
		c.stopAll(false)
	}
	if lastErr != nil {
		t.Fatalf("etcdtest: start: %v", lastErr)
	}
	for i := range c.members {
		c.waitReady(i)
	}
	c.Leader()
	return c
}

// startAttempt picks ports and directories for every member and starts
// them all.
func (c *Cluster) startAttempt() error {
	addrs, err := freeAddrs(2 * len(c.members))
	if err != nil {
		return err
	}
	var initial []string
	for i, m := range c.members {
		m.dir = c.t.TempDir()
		m.peerURL = url.URL{Scheme: "http", Host: addrs[2*i]}
		m.clientURL = url.URL{Scheme: c.scheme(), Host: addrs[2*i+1]}
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	// Registered after the TempDirs above, so it runs before they are
	// removed (cleanups run last-in first-out).
	c.t.Cleanup(func() { c.stopAll(true) })
	cluster := strings.Join(initial, ",")
	for i := range c.members {
		if err := c.startMember(i, cluster); err != nil {
			return err
		}
	}
	return nil
}

// freeAddrs returns n distinct loopback addresses whose ports are free
// right now. Ports are picked up front because every member must know its
// peers' addresses before any of them starts, and a restarted member needs
// its old ones. All n listeners are open at once so no two coincide.
func freeAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

func (c *Cluster) config(m *member, initialCluster string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.ListenPeerUrls = []url.URL{m.peerURL}
	cfg.AdvertisePeerUrls = []url.URL{m.peerURL}
	cfg.ListenClientUrls = []url.URL{m.clientURL}
	cfg.AdvertiseClientUrls = []url.URL{m.clientURL}
	cfg.InitialCluster = initialCluster
	cfg.InitialClusterToken = c.token
	cfg.TickMs = tickMs
	cfg.ElectionMs = electionMs
	// The data directory outlives the member only within one test process,
	// where the page cache keeps unsynced writes; fsync would only make
	// the tests slow.
	cfg.UnsafeNoFsync = true
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.EnableGRPCGateway = false
	if c.tls != nil {
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile:       c.tls.CertFile,
			KeyFile:        c.tls.KeyFile,
			TrustedCAFile:  c.tls.CAFile,
			ClientCertAuth: true,
		}
	}
	return cfg
}

func (c *Cluster) scheme() string {
	if c.tls != nil {
		return "https"
	}
	return "http"
}

func (c *Cluster) startMember(i int, initialCluster string) error {
	m := c.members[i]
	e, err := embed.StartEtcd(c.config(m, initialCluster))
	if err != nil {
		return fmt.Errorf("member %d: %w", i, err)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	m.bridge.setTarget(m.clientURL.Host)
	return nil
}

func (c *Cluster) waitReady(i int) {
	c.t.Helper()
	e := c.running(i)
	if e == nil {
		c.t.Fatalf("etcdtest: member %d is not running", i)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		c.t.Fatalf("etcdtest: member %d failed: %v", i, err)
	case <-time.After(readyTimeout):
		c.t.Fatalf("etcdtest: member %d not ready after %v", i, readyTimeout)
	}
}

func (c *Cluster) running(i int) *embed.Etcd {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.members[i].etcd
}

// Size is the number of members, running or not.
func (c *Cluster) Size() int { return len(c.members) }

// Endpoints returns every member's client URL (its bridge), stopped members
// included: clients are configured with all of them, as in production.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.members))
	for i, m := range c.members {
		out[i] = c.scheme() + "://" + m.bridge.addr()
	}
	return out
}

// Endpoint returns member i's client URL.
func (c *Cluster) Endpoint(i int) string { return c.Endpoints()[i] }

// Stop shuts member i down gracefully (a leader hands over leadership
// first); its data directory is kept for Restart.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	e := c.detach(i)
	if e == nil {
		c.t.Fatalf("etcdtest: Stop(%d): not running", i)
	}
	e.Close()
}

// Kill stops member i as abruptly as an in-process member can be: its
// client connections are cut, its raft loop is stopped without handing over
// leadership, then its listeners are closed. Its data directory is kept.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	e := c.detach(i)
	if e == nil {
		c.t.Fatalf("etcdtest: Kill(%d): not running", i)
	}
	e.Server.HardStop()
	e.Close()
}

// detach marks member i stopped and cuts its client connections.
func (c *Cluster) detach(i int) *embed.Etcd {
	c.mu.Lock()
	m := c.members[i]
	e := m.etcd
	m.etcd = nil
	c.mu.Unlock()
	m.bridge.cut()
	return e
}

// Restart starts a stopped member again from its data directory. It waits
// until the member serves when a majority will be running (otherwise it
// cannot become ready until more members return).
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.running(i) != nil {
		c.t.Fatalf("etcdtest: Restart(%d): already running", i)
	}
	var initial []string
	for _, m := range c.members {
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	if err := c.startMember(i, strings.Join(initial, ",")); err != nil {
		c.t.Fatalf("etcdtest: Restart(%d): %v", i, err)
	}
	if c.Running()*2 > len(c.members) {
		c.waitReady(i)
	}
}

// Running is the number of running members.
func (c *Cluster) Running() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.members {
		if m.etcd != nil {
			n++
		}
	}
	return n
}

// Blackhole makes member i's endpoint accept connections but never answer,
// as a member behind a dead network link does (on=false restores it). The
// member itself keeps running and stays in the cluster.
func (c *Cluster) Blackhole(i int, on bool) {
	c.members[i].bridge.setBlackhole(on)
}

// Freeze holds all client traffic to and from member i (on) or releases
// it: connections stay up, new ones are accepted, and nothing gets
// through, as behind a network partition no one has noticed yet. The
// member itself keeps running and talking to its peers.
func (c *Cluster) Freeze(i int, on bool) {
	c.members[i].bridge.setFrozen(on)
}

// Leader waits until the running members agree on a leader and returns its
// index. It fails the test if none is elected within readyTimeout.
func (c *Cluster) Leader() int {
	c.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		if i, ok := c.leader(); ok {
			return i
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatalf("etcdtest: no leader within %v", readyTimeout)
	return -1
}

// leader returns the leader's index when every running member reports it.
func (c *Cluster) leader() (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	idx, lead := -1, uint64(0)
	for _, m := range c.members {
		if m.etcd == nil {
			continue
		}
		l := uint64(m.etcd.Server.Leader())
		if l == 0 || (lead != 0 && l != lead) {
			return -1, false
		}
		lead = l
	}
	for i, m := range c.members {
		if m.etcd != nil && uint64(m.etcd.Server.MemberID()) == lead {
			idx = i
		}
	}
	return idx, idx >= 0
}

// Client returns a raw etcd client on every endpoint, closed at test end,
// for inspecting or seeding the cluster behind the store's back. On a TLS
// cluster it presents TLSFiles' client certificate.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cfg := clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	}
	if c.tls != nil {
		info := transport.TLSInfo{CertFile: c.tls.ClientCertFile, KeyFile: c.tls.ClientKeyFile, TrustedCAFile: c.tls.CAFile}
		tc, err := info.ClientConfig()
		if err != nil {
			t.Fatalf("etcdtest: client TLS: %v", err)
		}
		cfg.TLS = tc
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// stopAll stops every running member, and the bridges if final.
func (c *Cluster) stopAll(final bool) {
	var wg sync.WaitGroup
	for i := range c.members {
		if e := c.detach(i); e != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// No leadership hand-over: the whole cluster is going.
				e.Server.HardStop()
				e.Close()
			}()
		}
	}
	wg.Wait()
	if final {
		for _, m := range c.members {
			m.bridge.close()
		}
	}
}

// ctxTimeout is a helper for tests in this package.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

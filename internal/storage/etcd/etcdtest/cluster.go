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

	mu sync.Mutex // guards every member's etcd field
}

type member struct {
	name               string
	dir                string
	peerURL, clientURL url.URL
	bridge             *bridge
	etcd               *embed.Etcd // nil while stopped
}

// Start runs a cluster of members members (1, 3 or 5 make sense), waits
// until it has a leader and every member serves, and stops it when the test
// ends.
func Start(t testing.TB, members int) *Cluster {
	t.Helper()
	if members < 1 {
		t.Fatalf("etcdtest.Start: %d members", members)
	}
	c := &Cluster{t: t, token: fmt.Sprintf("etcdtest-%d", time.Now().UnixNano())}
	var initial []string
	for i := range members {
		b, err := newBridge()
		if err != nil {
			t.Fatalf("etcdtest: bridge: %v", err)
		}
		m := &member{
			name:      fmt.Sprintf("m%d", i),
			dir:       t.TempDir(),
			peerURL:   url.URL{Scheme: "http", Host: freeAddr(t)},
			clientURL: url.URL{Scheme: "http", Host: freeAddr(t)},
			bridge:    b,
		}
		c.members = append(c.members, m)
		initial = append(initial, m.name+"="+m.peerURL.String())
	}
	// Registered after every TempDir, so it runs before they are removed.
	t.Cleanup(c.stopAll)
	cluster := strings.Join(initial, ",")
	for i := range c.members {
		c.startMember(i, cluster)
	}
	for i := range c.members {
		c.waitReady(i)
	}
	c.Leader()
	return c
}

// freeAddr returns a loopback address with a port free right now. Ports
// are picked up front because every member must know its peers' addresses
// before any of them starts, and a restarted member needs its old ones.
func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
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
	return cfg
}

func (c *Cluster) startMember(i int, initialCluster string) {
	c.t.Helper()
	m := c.members[i]
	e, err := embed.StartEtcd(c.config(m, initialCluster))
	if err != nil {
		c.t.Fatalf("etcdtest: start member %d: %v", i, err)
	}
	c.mu.Lock()
	m.etcd = e
	c.mu.Unlock()
	m.bridge.setTarget(m.clientURL.Host)
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
		out[i] = "http://" + m.bridge.addr()
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
	c.startMember(i, strings.Join(initial, ","))
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
// for inspecting or seeding the cluster behind the store's back.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   c.Endpoints(),
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("etcdtest: client: %v", err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// stopAll stops every running member and the bridges.
func (c *Cluster) stopAll() {
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
	for _, m := range c.members {
		m.bridge.close()
	}
}

// ctxTimeout is a helper for tests in this package.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

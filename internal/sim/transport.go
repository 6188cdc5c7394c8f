package sim

import (
	"fmt"
	"net/http"
	"time"

	"golang.org/x/net/http2"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// withSharedConnTransport gives rc the transport client-go would build for
// it, with two differences: nodes' requests spread over conns separate
// connection pools (spreadConns), and the HTTP/2 header encoder keeps no
// dynamic table.
//
// A kubelet has its own connection, on which its Lease's path is indexed
// once and sent as a one-byte reference ever after. The simulator's
// 10,000 nodes share a few connections, so every request's path is new to
// the 4 KB table: each one was inserted and evicted an older entry, which
// cost about a tenth of the simulator's CPU (profile in
// docs/bench/sim.md, run 8). Sending headers as literals costs less than
// that churn and changes nothing the API server sees but a few bytes.
func withSharedConnTransport(rc *rest.Config, conns int) error {
	pool := make([]*http.Transport, max(conns, 1))
	for i := range pool {
		t, err := newTransport(rc)
		if err != nil {
			return err
		}
		t.MaxIdleConnsPerHost = 25 // client-go's idleConnsPerHost
		if t.TLSClientConfig != nil {
			t2, err := http2.ConfigureTransports(t)
			if err != nil {
				return fmt.Errorf("sim: configuring HTTP/2: %w", err)
			}
			// client-go's connection health check (utilnet's defaults).
			t2.ReadIdleTimeout = 30 * time.Second
			t2.PingTimeout = 15 * time.Second
			// Zero would mean the default 4 KB; no header field fits in one byte.
			t2.MaxEncoderHeaderTableSize = 1
		}
		pool[i] = t
	}
	if len(pool) == 1 {
		useTransport(rc, pool[0])
		return nil
	}
	spread := make(spreadConns, len(pool))
	for i, t := range pool {
		spread[i] = t
	}
	useTransport(rc, spread)
	return nil
}

// spreadConns sends each node's requests through one of its transports,
// chosen by the node's index, and the simulator's own through the first.
//
// One transport multiplexes up to the server's stream limit (1,000) on one
// HTTP/2 connection, so 1,000 nodes' pod watches and status writes shared a
// single TCP connection: one goroutine at each end read, and one wrote, every
// frame of them, and a Running status write waited behind the watch events
// queued on it (p99 0.85 s at 1,000 × 30 where the server's own handling
// took ~10 ms). Kubelets each have their own connection.
type spreadConns []http.RoundTripper

func (p spreadConns) RoundTrip(req *http.Request) (*http.Response, error) {
	if h, ok := req.Context().Value(nodeIdentityKey{}).(*nodeHeaders); ok {
		return p[h.conn%len(p)].RoundTrip(req)
	}
	return p[0].RoundTrip(req)
}

// CloseIdleConnections closes every transport's idle connections.
func (p spreadConns) CloseIdleConnections() {
	for _, t := range p {
		if c, ok := t.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	}
}

// heartbeatConns is how many HTTP/1.1 connections heartbeats use at most,
// all kept open between them: many times what 1,167 heartbeats a second
// keep in flight (a handful). A heartbeat beyond them waits for one to free
// up. Without the cap, every stall of the server (a large LIST beside it)
// made the simulator dial hundreds of TLS connections at once, one per
// renewal queued behind the stall, at a cost to both sides just when the
// server was slowest.
const heartbeatConns = 64

// withHeartbeatTransport gives rc client-go's transport with HTTP/2 turned
// off (what DISABLE_HTTP2 does): at most heartbeatConns keep-alive HTTP/1.1
// connections. See Config.HeartbeatsOverHTTP2 for why heartbeats use it.
func withHeartbeatTransport(rc *rest.Config) error {
	t, err := newTransport(rc)
	if err != nil {
		return err
	}
	t.MaxConnsPerHost = heartbeatConns
	t.MaxIdleConnsPerHost = heartbeatConns
	if t.TLSClientConfig != nil {
		t.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	useTransport(rc, t)
	return nil
}

// newTransport is the http.Transport client-go would build for rc, without
// HTTP/2 yet.
func newTransport(rc *rest.Config) (*http.Transport, error) {
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		return nil, fmt.Errorf("sim: TLS config: %w", err)
	}
	t := utilnet.SetOldTransportDefaults(&http.Transport{
		TLSClientConfig:    tlsConfig,
		DisableCompression: rc.DisableCompression,
	})
	if rc.Dial != nil {
		t.DialContext = rc.Dial
	}
	if rc.Proxy != nil {
		t.Proxy = rc.Proxy
	}
	return t, nil
}

// useTransport makes rc use t. client-go refuses TLS options beside a
// custom transport: they live in t's TLS config now.
func useTransport(rc *rest.Config, t http.RoundTripper) {
	rc.Transport = t
	rc.TLSClientConfig = rest.TLSClientConfig{}
	rc.Dial = nil
}

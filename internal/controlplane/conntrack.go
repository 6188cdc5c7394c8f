package controlplane

import (
	"net"
	"sync"
)

// connTracker is a listener that remembers the connections it accepted
// and that are still open, so that a shutdown can close, once the
// GOAWAYs had their moment (httpsFlush), the TCP connections of clients
// that did not hang up, at once and without TLS's close_notify, instead
// of waiting out its grace for them. Clients see the connection end as
// after a crash, and reconnect.
type connTracker struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func trackConns(ln net.Listener) *connTracker {
	return &connTracker{Listener: ln, conns: map[*trackedConn]struct{}{}}
}

func (t *connTracker) Accept() (net.Conn, error) {
	c, err := t.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, tracker: t}
	t.mu.Lock()
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc, nil
}

// closeAll closes every open connection's TCP connection and returns how
// many it closed.
func (t *connTracker) closeAll() int {
	t.mu.Lock()
	conns := t.conns
	t.conns = map[*trackedConn]struct{}{}
	t.mu.Unlock()
	for c := range conns {
		_ = c.Conn.Close()
	}
	return len(conns)
}

type trackedConn struct {
	net.Conn
	tracker *connTracker
}

func (c *trackedConn) Close() error {
	c.tracker.mu.Lock()
	delete(c.tracker.conns, c)
	c.tracker.mu.Unlock()
	return c.Conn.Close()
}

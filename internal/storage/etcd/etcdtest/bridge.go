package etcdtest

import (
	"errors"
	"io"
	"net"
	"sync"
)

// bridge forwards client connections from a fixed loopback address to one
// member. While the member is down it refuses (accepts and closes) every
// connection, so clients fail fast and move to another endpoint.
type bridge struct {
	ln net.Listener

	mu struct {
		sync.Mutex
		target string // member's client address; "" while it is down
		// blackhole makes the bridge accept connections and swallow their
		// traffic without answering: an unreachable-but-not-refusing etcd.
		blackhole bool
		conns     map[net.Conn]struct{}
		// frozen, while non-nil, holds every byte in flight on open
		// connections until it is closed: a network that went silent
		// without resetting anything.
		frozen chan struct{}
	}
	wg sync.WaitGroup
}

func newBridge() (*bridge, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &bridge{ln: ln}
	b.mu.conns = map[net.Conn]struct{}{}
	b.wg.Add(1)
	go b.serve()
	return b, nil
}

func (b *bridge) addr() string { return b.ln.Addr().String() }

func (b *bridge) serve() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		b.mu.Lock()
		target, hole := b.mu.target, b.mu.blackhole
		if target == "" {
			b.mu.Unlock()
			c.Close()
			continue
		}
		b.mu.conns[c] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if hole {
				_, _ = io.Copy(io.Discard, c)
			} else {
				b.forward(c, target)
			}
			b.forget(c)
		}()
	}
}

func (b *bridge) forward(c net.Conn, target string) {
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	if !b.track(up) {
		up.Close()
		return
	}
	defer b.forget(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, gatedReader{b, src})
		// Closing both ends makes the other direction end too.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// track registers an upstream connection so cut closes it; false means the
// member went down while it was being dialled.
func (b *bridge) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.target == "" {
		return false
	}
	b.mu.conns[c] = struct{}{}
	return true
}

func (b *bridge) forget(c net.Conn) {
	c.Close()
	b.mu.Lock()
	delete(b.mu.conns, c)
	b.mu.Unlock()
}

// setTarget points the bridge at a running member's client address.
func (b *bridge) setTarget(addr string) {
	b.mu.Lock()
	b.mu.target = addr
	b.mu.Unlock()
}

// cut stops forwarding and closes every open connection.
func (b *bridge) cut() {
	b.mu.Lock()
	b.mu.target = ""
	conns := b.mu.conns
	b.mu.conns = map[net.Conn]struct{}{}
	b.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// setBlackhole switches between forwarding and swallowing traffic; switching
// closes the open connections so clients notice and redial.
func (b *bridge) setBlackhole(on bool) {
	b.mu.Lock()
	b.mu.blackhole = on
	conns := b.mu.conns
	b.mu.conns = map[net.Conn]struct{}{}
	b.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// setFrozen holds (on) or releases the traffic of open connections.
func (b *bridge) setFrozen(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case on && b.mu.frozen == nil:
		b.mu.frozen = make(chan struct{})
	case !on && b.mu.frozen != nil:
		close(b.mu.frozen)
		b.mu.frozen = nil
	}
}

// gatedReader waits out a freeze before passing on what it read.
type gatedReader struct {
	b *bridge
	r io.Reader
}

func (g gatedReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.b.mu.Lock()
	gate := g.b.mu.frozen
	g.b.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return n, err
}

func (b *bridge) close() {
	b.setFrozen(false)
	b.ln.Close()
	b.cut()
	b.wg.Wait()
}

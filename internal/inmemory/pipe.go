package inmemory

import (
	"io"
	"sync"
)

// pipeWindow is how many unread bytes a streaming response may hold
// before the handler's writes wait for the client: HTTP/2's per-stream
// flow-control window plays this part over the network.
const pipeWindow = 64 << 10

// buffers recycles pipes' buffers: a large LIST would otherwise allocate
// a window's worth per response.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, pipeWindow); return &b }}

// pipe is a streaming response's body: an io.Pipe with a window. Unlike
// io.Pipe, whose every Write waits until the reader has taken it all, a
// write returns as soon as it fits in the window, so a watch handler
// hands over an event without waiting for the client's goroutine to run,
// and the client reads whatever has piled up in one Read. Safe for one
// writer and one reader at a time.
type pipe struct {
	mu   sync.Mutex
	cond sync.Cond // on mu; broadcast on data, room and close
	buf  []byte    // unread: buf[r:]; nil when empty
	r    int
	// pooled is the pool's handle on buf's array, put back as it came
	// (a new pointer per Put would allocate).
	pooled *[]byte
	// werr ends reads: once the buffer is drained, or at once when
	// !drain (the client's side cancelled).
	werr  error
	drain bool
	// rerr fails writes: the reader is gone.
	rerr error
}

func newPipe() *pipe {
	p := &pipe{}
	p.cond.L = &p.mu
	return p
}

// Write copies b into the window, waiting for room as needed.
func (p *pipe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for len(b) > 0 {
		switch {
		case p.rerr != nil:
			return n, p.rerr
		case p.werr != nil:
			return n, io.ErrClosedPipe
		}
		room := pipeWindow - (len(p.buf) - p.r)
		if room <= 0 {
			p.cond.Wait()
			continue
		}
		k := min(room, len(b))
		if p.buf == nil {
			p.pooled = buffers.Get().(*[]byte)
			p.buf = (*p.pooled)[:0]
		}
		if p.r > 0 && len(p.buf)+k > cap(p.buf) {
			// Slide the unread bytes down: unread + k <= pipeWindow,
			// the pool's capacity, so buf never grows.
			p.buf = p.buf[:copy(p.buf, p.buf[p.r:])]
			p.r = 0
		}
		p.buf = append(p.buf, b[:k]...)
		b = b[k:]
		n += k
		p.cond.Broadcast()
	}
	return n, nil
}

// Read returns what is buffered, waiting for data or the end.
func (p *pipe) Read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		if p.werr != nil && !p.drain {
			return 0, p.werr
		}
		if p.rerr != nil {
			return 0, io.ErrClosedPipe
		}
		if p.r < len(p.buf) {
			n := copy(b, p.buf[p.r:])
			p.r += n
			if p.r == len(p.buf) {
				// Drained: back to the pool, so an idle watch holds no
				// buffer; the next write takes one again.
				p.releaseLocked()
			}
			p.cond.Broadcast()
			return n, nil
		}
		if p.werr != nil {
			p.releaseLocked()
			return 0, p.werr
		}
		p.cond.Wait()
	}
}

// closeWrite ends the stream after the buffered bytes, with err (nil:
// io.EOF), as a server's last bytes reach the client before its close
// or reset. The first close wins.
func (p *pipe) closeWrite(err error) {
	if err == nil {
		err = io.EOF
	}
	p.close(err, true)
}

// cancel ends the stream at once with err: the exchange was cancelled,
// and what is unread is dropped. The first close wins.
func (p *pipe) cancel(err error) { p.close(err, false) }

func (p *pipe) close(err error, drain bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.werr == nil {
		p.werr, p.drain = err, drain
	}
	p.cond.Broadcast()
}

// closeRead fails the writer's pending and later writes with err.
func (p *pipe) closeRead(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rerr == nil {
		p.rerr = err
	}
	p.releaseLocked()
	p.cond.Broadcast()
}

// releaseLocked returns the buffer to the pool: when it is drained or
// the reader is gone, nothing in it is still to be read. Callers hold mu,
// which every use of buf is under.
func (p *pipe) releaseLocked() {
	if p.pooled != nil {
		// Writes never grow buf past the window (see Write), so this
		// is the array the pool gave.
		buffers.Put(p.pooled)
	}
	p.buf, p.r, p.pooled = nil, 0, nil
}

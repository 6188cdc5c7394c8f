package inmemory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Errors a RoundTrip returns. Match them with errors.Is.
var (
	// ErrUpgrade: the request asks to switch protocols (Connection:
	// Upgrade), which needs a connection to hijack.
	ErrUpgrade = errors.New("inmemory: connection upgrades (exec, attach, port-forward) are not supported in memory; use a network client")
	// ErrClosed: the transport has shut down, as a server that has stopped
	// listening refuses connections.
	ErrClosed = errors.New("inmemory: transport shut down")
	// ErrAborted: the handler aborted the response (panicked, or
	// panicked with http.ErrAbortHandler), as a reset stream would.
	ErrAborted = errors.New("inmemory: the handler aborted the response")
	// errBodyClosed ends the handler's context when the client closes the
	// response body before the end.
	errBodyClosed = errors.New("inmemory: the client closed the response body")
)

// DefaultRemoteAddr is the RemoteAddr handlers see unless Config says
// otherwise.
const DefaultRemoteAddr = "127.0.0.1:0"

// DefaultFlushThreshold is how many bytes of a response are buffered
// before it starts streaming without a flush from the handler.
const DefaultFlushThreshold = 32 << 10

// Config configures a Transport. Zero values take the stated defaults.
type Config struct {
	// Handler serves every request. Required.
	Handler http.Handler
	// BaseContext is what every request's context derives from, as
	// http.Server's BaseContext: when it is done, in-flight requests
	// (watches) end. Default context.Background().
	BaseContext context.Context
	// RemoteAddr is every request's RemoteAddr (default
	// DefaultRemoteAddr). Audit's sourceIPs parse it, so keep it an
	// IP:port.
	RemoteAddr string
	// FlushThreshold is the most a response buffers before streaming
	// (default DefaultFlushThreshold).
	FlushThreshold int
	// Logger logs handler panics (default slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Handler == nil {
		return c, errors.New("inmemory: Config.Handler is required")
	}
	if c.BaseContext == nil {
		c.BaseContext = context.Background()
	}
	if c.RemoteAddr == "" {
		c.RemoteAddr = DefaultRemoteAddr
	}
	if c.FlushThreshold <= 0 {
		c.FlushThreshold = DefaultFlushThreshold
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Transport serves requests by calling Config.Handler. Safe for concurrent
// use; every request runs its handler on a goroutine of its own, joined
// by Shutdown.
type Transport struct {
	cfg    Config
	base   context.Context
	cancel context.CancelFunc

	mu struct {
		sync.RWMutex
		closed bool
	}
	// inflight counts running handlers; Add only under mu's read lock
	// while not closed, so Shutdown's Wait sees every one.
	inflight sync.WaitGroup
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport over cfg.Handler.
func New(cfg Config) (*Transport, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	t := &Transport{cfg: cfg}
	t.base, t.cancel = context.WithCancel(cfg.BaseContext)
	return t, nil
}

// RoundTrip serves req. It returns once the handler has flushed, written
// past the flush threshold, or returned; the handler goes on streaming
// into the response body after that. As http.RoundTripper requires, it
// does not modify req and always closes req.Body (once the handler is
// done with it).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL == nil {
		closeBody(req)
		return nil, errors.New("inmemory: nil Request.URL")
	}
	if isUpgrade(req.Header) {
		closeBody(req)
		return nil, fmt.Errorf("%w (%s %s, Upgrade: %q)", ErrUpgrade, req.Method, req.URL.Path, req.Header.Get("Upgrade"))
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	sreq, err := t.serverRequest(req)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	t.mu.RLock()
	if t.mu.closed {
		t.mu.RUnlock()
		closeBody(req)
		return nil, ErrClosed
	}
	t.inflight.Add(1)
	t.mu.RUnlock()

	w := newResponseWriter(t, req, sreq)
	go w.serve()
	select {
	case r := <-w.ready:
		return r.resp, r.err
	case <-ctx.Done():
		// The handler's context ends with the client's (see
		// newResponseWriter); a response it still delivers is dropped
		// with its pipe closed.
		return nil, ctx.Err()
	}
}

// CancelRequest does nothing: a request ends when its context does, and
// http.Client, which calls this when its Timeout expires, gives the
// request a context with that deadline too. It exists because client-go's
// round trippers log "unable to cancel request" for every timed-out
// request (leader election's, say) through a transport without it.
func (t *Transport) CancelRequest(*http.Request) {}

// serverRequest is req as net/http's server would present it to a
// handler. The header is a copy: filters edit theirs (authentication
// removes Authorization), and a RoundTripper must not modify its request.
func (t *Transport) serverRequest(req *http.Request) (*http.Request, error) {
	uri := req.URL.RequestURI()
	u := &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	if req.URL.Opaque != "" {
		var err error
		if u, err = url.ParseRequestURI(uri); err != nil {
			return nil, fmt.Errorf("inmemory: request URI %q: %w", uri, err)
		}
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	h := req.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	body, n := req.Body, req.ContentLength
	switch {
	case body == nil || body == http.NoBody:
		body, n = http.NoBody, 0
	case n == 0:
		// A client's 0 with a body means unknown; a server's is -1.
		n = -1
	}
	return &http.Request{
		Method:        method,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        h,
		Body:          body,
		ContentLength: n,
		Host:          host,
		RemoteAddr:    t.cfg.RemoteAddr,
		RequestURI:    uri,
	}, nil
}

// Shutdown refuses new requests, ends in-flight ones (their contexts are
// cancelled, as BaseContext's end ends a server's) and waits for their
// handlers to return, until ctx is done. Idempotent.
func (t *Transport) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	t.mu.closed = true
	t.mu.Unlock()
	t.cancel()
	done := make(chan struct{})
	go func() { t.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inmemory: waiting for in-flight handlers: %w", ctx.Err())
	}
}

// isUpgrade reports whether h asks to switch protocols.
func isUpgrade(h http.Header) bool {
	if len(h["Upgrade"]) > 0 {
		return true
	}
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

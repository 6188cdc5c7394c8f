// Package inmemory is an http.RoundTripper that serves each request by
// calling an http.Handler in the same address space: no TCP, no TLS, no
// HTTP/2 framing. `myriad up` hands its in-process clients (the scheduler,
// the controller manager) one over the control plane's whole filter chain,
// so authentication by bearer token, authorization, API Priority and
// Fairness, audit and admission judge them exactly as they judge any
// client; only the wire is gone.
//
// The handler sees what net/http's server would give it: RequestURI, Host,
// RemoteAddr (127.0.0.1:0 — loopback, as the TLS loopback client's, with a
// port no TCP connection has, so logs tell the two apart), Proto HTTP/2.0,
// TLS nil, the body and ContentLength, and a context that ends when the
// client cancels, closes the response body, or the transport shuts down.
//
// Responses are buffered as net/http buffers them: headers and body go out
// together when the handler returns, flushes, or has written more than
// Config.FlushThreshold; a small response thus costs no pipe and no
// goroutine hand-off, while a watch (which flushes after every event) or a
// large LIST streams through a pipe with a 64 KiB window: the handler
// waits for the client only when that much is unread, as HTTP/2's flow
// control would make it wait.
//
// Not supported: connection upgrades (exec, attach, port-forward need
// Hijack; such requests fail at once with ErrUpgrade), 1xx informational
// responses (dropped), trailers, and the Date and computed Content-Length
// headers (Response.ContentLength carries the length when it is known).
package inmemory

package inmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// result is what RoundTrip waits for: the response, or why there is none.
type result struct {
	resp *http.Response
	err  error
}

// responseWriter is one exchange: the handler's http.ResponseWriter and
// the bookkeeping that turns what it writes into the client's
// http.Response. Its methods run on the handler's goroutine only (as
// net/http's ResponseWriter, it is not for concurrent use); the client
// reaches the exchange through the response body and the contexts.
type responseWriter struct {
	t    *Transport
	req  *http.Request // the client's
	sreq *http.Request // the handler's
	// cancel ends the handler's context, with a cause.
	cancel context.CancelCauseFunc
	// stopClientCancel unhooks the client context's cancellation, so a
	// long-lived client context does not collect one callback per request.
	stopClientCancel func() bool
	ready            chan result // cap 1; sent at most once (delivered)

	header      http.Header
	status      int   // 0 until WriteHeader; never 1xx
	declared    int64 // the handler's Content-Length, or -1
	written     int64
	head        bool // HEAD: writes are counted and dropped
	bodyAllowed bool
	delivered   bool
	pending     []byte // written, not yet delivered or piped

	// Set when the response streams (deliverStream). stream is pw for
	// the client context's cancellation, which runs on another goroutine.
	pw       *pipe
	stream   atomic.Pointer[pipe]
	stopPipe func() bool
}

func newResponseWriter(t *Transport, req, sreq *http.Request) *responseWriter {
	ctx, cancel := context.WithCancelCause(t.base)
	w := &responseWriter{
		t: t, req: req, cancel: cancel,
		ready:    make(chan result, 1),
		header:   http.Header{},
		declared: -1,
		head:     sreq.Method == http.MethodHead,
	}
	cctx := req.Context()
	w.stopClientCancel = context.AfterFunc(cctx, func() {
		// As net/http's client, reads fail at once, whatever the
		// handler does next.
		cause := context.Cause(cctx)
		if p := w.stream.Load(); p != nil {
			p.cancel(cause)
		}
		cancel(cause)
	})
	w.sreq = sreq.WithContext(ctx)
	return w
}

// serve runs the handler and settles the exchange however it ends.
func (w *responseWriter) serve() {
	defer w.t.inflight.Done()
	defer w.end()
	defer func() {
		if p := recover(); p != nil {
			w.abort(p)
		}
	}()
	w.t.cfg.Handler.ServeHTTP(w, w.sreq)
	w.finish()
}

// end releases the exchange once the handler has returned, as net/http
// cancels a request's context when its handler returns.
func (w *responseWriter) end() {
	w.stopClientCancel()
	if w.stopPipe != nil {
		// Ending the context below must not turn a finished stream's
		// EOF into an error.
		w.stopPipe()
	}
	w.cancel(context.Canceled)
	closeBody(w.req)
}

func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader records the status; like net/http's, it sends nothing
// until the first flush, the buffer's overflow or the handler's return.
func (w *responseWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http
	}
	if w.status != 0 {
		return
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		return // informational; see the package comment
	}
	w.status = code
	w.bodyAllowed = bodyAllowedForStatus(code)
	if cl := w.header.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.declared = v
		} else {
			w.header.Del("Content-Length") // as net/http: an invalid one is dropped
		}
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.bodyAllowed {
		return 0, http.ErrBodyNotAllowed
	}
	if w.declared >= 0 && w.written+int64(len(p)) > w.declared {
		return 0, http.ErrContentLength
	}
	if w.head {
		w.written += int64(len(p))
		return len(p), nil
	}
	if len(w.pending)+len(p) <= w.t.cfg.FlushThreshold {
		w.pending = append(w.pending, p...)
		w.written += int64(len(p))
		return len(p), nil
	}
	// Too much to hold: stream, handing p to the reader without a copy.
	if !w.delivered {
		w.deliverStream(p)
	}
	if err := w.push(); err != nil {
		return 0, err
	}
	if _, err := w.pw.Write(p); err != nil {
		return 0, err
	}
	w.written += int64(len(p))
	return len(p), nil
}

// Flush sends the status, headers and whatever is buffered; watches call
// it after every event.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting a client that has gone away
// (http.ResponseController prefers it).
func (w *responseWriter) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.delivered {
		w.deliverStream(nil)
	}
	return w.push()
}

// push hands the buffered bytes to the reader, blocking until it has
// read them all (or gone away).
func (w *responseWriter) push() error {
	if w.pw == nil || len(w.pending) == 0 {
		return nil
	}
	_, err := w.pw.Write(w.pending)
	// The pipe has copied them: reuse the buffer.
	w.pending = w.pending[:0]
	return err
}

// response is the client's http.Response for the current status and h.
func (w *responseWriter) response(h http.Header) *http.Response {
	code := w.status
	return &http.Response{
		Status:     strconv.Itoa(code) + " " + http.StatusText(code),
		StatusCode: code,
		Proto:      "HTTP/2.0", ProtoMajor: 2,
		Header:        h,
		Body:          http.NoBody,
		ContentLength: -1,
		Request:       w.req,
	}
}

// deliverStream sends the response before the handler is done: its body
// is a pipe the handler keeps writing into. first is the data about to
// be written, for content sniffing.
func (w *responseWriter) deliverStream(first []byte) {
	w.delivered = true
	w.sniff(first)
	// The handler may go on changing its header map; the client's copy
	// is the one sent, as net/http's.
	resp := w.response(w.header.Clone())
	if !w.bodyAllowed || w.head {
		if w.declared >= 0 && w.head {
			resp.ContentLength = w.declared
		} else if !w.bodyAllowed {
			resp.ContentLength = 0
		}
		w.ready <- result{resp: resp}
		return
	}
	pw := newPipe()
	w.pw = pw
	w.stream.Store(pw)
	if cctx := w.req.Context(); cctx.Err() != nil {
		// Cancelled before the Store: the hook above saw no pipe.
		pw.cancel(context.Cause(cctx))
	}
	ctx := w.sreq.Context()
	// However the handler's context ends early (the client cancels or
	// closes the body, the transport shuts down), a handler blocked on
	// a write that nobody will read is let go, and the client's read
	// ends with the cause.
	w.stopPipe = context.AfterFunc(ctx, func() { pw.cancel(context.Cause(ctx)) })
	resp.ContentLength = w.declared
	resp.Body = &pipeBody{p: pw, cancel: w.cancel}
	w.ready <- result{resp: resp}
}

// finish completes a response after the handler has returned.
func (w *responseWriter) finish() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.delivered {
		if w.pw == nil {
			return
		}
		if err := w.push(); err != nil {
			return
		}
		if w.declared >= 0 && w.written < w.declared {
			// net/http would close the connection short of the body.
			w.pw.closeWrite(io.ErrUnexpectedEOF)
			return
		}
		w.pw.closeWrite(nil)
		return
	}
	// The whole response is known: one hand-off, no pipe. The handler is
	// done with its header map, so the client gets it as it is.
	w.delivered = true
	w.sniff(nil)
	resp := w.response(w.header)
	switch {
	case !w.bodyAllowed:
		resp.ContentLength = 0
	case w.head:
		// What a GET would have sent, as net/http reports it.
		resp.ContentLength = w.declared
		if resp.ContentLength < 0 {
			resp.ContentLength = w.written
		}
	case w.declared >= 0 && w.written < w.declared:
		resp.ContentLength = w.declared
		resp.Body = newBytesBody(w.pending, io.ErrUnexpectedEOF)
	default:
		// ContentLength says it; a Content-Length header is added only if
		// the handler set one (two allocations per request saved).
		resp.ContentLength = int64(len(w.pending))
		if len(w.pending) > 0 {
			resp.Body = newBytesBody(w.pending, io.EOF)
		}
	}
	w.ready <- result{resp: resp}
}

// sniff sets Content-Type from the body's first bytes when the handler
// set none, as net/http does.
func (w *responseWriter) sniff(first []byte) {
	if _, ok := w.header["Content-Type"]; ok || !w.bodyAllowed || w.head {
		return
	}
	data := w.pending
	if len(data) == 0 {
		data = first
	}
	if len(data) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(data))
	}
}

// abort settles an exchange whose handler panicked: before the response
// went out, a 500 Status (http.ErrAbortHandler: an error, as a reset
// stream); after, the body ends in ErrAborted. Panics other than
// http.ErrAbortHandler are logged with their stack, as net/http logs them.
func (w *responseWriter) abort(p any) {
	if p != http.ErrAbortHandler {
		w.t.cfg.Logger.Error("panic serving in-memory request",
			"method", w.sreq.Method, "path", w.sreq.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
	}
	if w.delivered {
		if w.pw != nil {
			w.pw.closeWrite(ErrAborted)
		}
		return
	}
	w.delivered = true
	if p == http.ErrAbortHandler {
		w.ready <- result{err: ErrAborted}
		return
	}
	st := apierrors.NewInternalError(errors.New("this request caused the apiserver to panic; look in the logs for details")).ErrStatus
	st.Kind, st.APIVersion = "Status", "v1"
	body, err := json.Marshal(st)
	if err != nil {
		w.ready <- result{err: fmt.Errorf("%w: %v", ErrAborted, err)}
		return
	}
	w.status = http.StatusInternalServerError
	h := http.Header{"Content-Type": {"application/json"}, "Content-Length": {strconv.Itoa(len(body))}}
	resp := w.response(h)
	resp.ContentLength = int64(len(body))
	resp.Body = newBytesBody(body, io.EOF)
	w.ready <- result{resp: resp}
}

// bodyAllowedForStatus is net/http's rule: no body for 1xx, 204 and 304.
func bodyAllowedForStatus(code int) bool {
	switch {
	case code >= 100 && code <= 199:
		return false
	case code == http.StatusNoContent, code == http.StatusNotModified:
		return false
	}
	return true
}

// pipeBody is a streaming response's body. Closing it ends the handler's
// context and fails the handler's pending and later writes, as a client
// hanging up on a stream does.
type pipeBody struct {
	p      *pipe
	cancel context.CancelCauseFunc
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.p.Read(p) }

func (b *pipeBody) Close() error {
	b.p.closeRead(errBodyClosed)
	b.cancel(errBodyClosed)
	return nil
}

// bytesBody is a complete response's body: the bytes, then tail
// (io.EOF, or io.ErrUnexpectedEOF for a body short of its
// Content-Length).
type bytesBody struct {
	r    bytes.Reader
	tail error
}

func newBytesBody(data []byte, tail error) *bytesBody {
	b := &bytesBody{tail: tail}
	b.r.Reset(data)
	return b
}

func (b *bytesBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = b.tail
	}
	return n, err
}

func (b *bytesBody) Close() error { return nil }

package upstream

import (
	"context"
	"io"
	"net/http"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// InProcessConfig is a client configuration whose requests h serves in
// this process, as user, without a socket: h is the API server's own
// handler (behind authentication, so the user is set here). Responses
// stream (watches work); closing a body or ending the request's context
// ends the handler's request.
func InProcessConfig(h http.Handler, u *request.User) *rest.Config {
	return &rest.Config{
		Host:      "http://myriad.in-process",
		Transport: inProcess{h: h, user: u},
		QPS:       -1, // no client-side rate limit against oneself
	}
}

type inProcess struct {
	h    http.Handler
	user *request.User
}

func (t inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(request.WithUser(req.Context(), t.user))
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, body: pw, ready: make(chan struct{})}
	r := req.Clone(ctx)
	if r.Body == nil {
		r.Body = http.NoBody
	}
	go func() {
		defer cancel()
		t.h.ServeHTTP(w, r)
		w.WriteHeader(http.StatusOK) // a handler that wrote nothing
		_ = pw.Close()
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		cancel()
		return nil, req.Context().Err()
	}
	return &http.Response{
		StatusCode: w.status, Status: http.StatusText(w.status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: &cancelBody{ReadCloser: pr, cancel: cancel}, Request: req, ContentLength: -1,
	}, nil
}

// pipeWriter is an http.ResponseWriter that hands the header to the
// waiting RoundTrip on the first WriteHeader and streams the body through
// a pipe.
type pipeWriter struct {
	header http.Header
	sent   http.Header
	body   *io.PipeWriter
	once   sync.Once
	status int
	ready  chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		// The response's header is the handler's at this point; later
		// changes are not seen, as with a real connection.
		w.sent = w.header.Clone()
		w.status = code
		close(w.ready)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush: writes reach the reader at once through the pipe.
func (w *pipeWriter) Flush() {}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	b.cancel()
	return b.ReadCloser.Close()
}

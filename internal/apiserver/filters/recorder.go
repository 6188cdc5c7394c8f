package filters

import (
	"bufio"
	"net"
	"net/http"
)

// recorder remembers the status code and size of a response for metrics,
// logging and panic recovery. One recorder is shared by all filters of a
// request (see record), so the chain adds one wrapper, not one per filter.
//
// It must not hide the optional interfaces watch and exec handlers rely on:
// Flush and Hijack are forwarded, and Unwrap lets http.ResponseController
// reach everything else.
type recorder struct {
	http.ResponseWriter
	code    int
	written int64
}

// record returns w itself if it is already a recorder, else wraps it.
func record(w http.ResponseWriter) *recorder {
	if rec, ok := w.(*recorder); ok {
		return rec
	}
	return &recorder{ResponseWriter: w}
}

// wroteHeader reports whether the status line has gone out, after which an
// error can no longer be reported as a Status.
func (r *recorder) wroteHeader() bool { return r.code != 0 }

// status is the code the client saw or will see: 200 if the handler wrote
// nothing at all, as net/http does.
func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}

func (r *recorder) WriteHeader(code int) {
	// Informational codes (100 Continue, 103 Early Hints) precede the real
	// status; a 101 is final (the connection switches protocol).
	if r.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.written += int64(n)
	return n, err
}

// Flush sends buffered data to the client; watch streams call it after
// every event.
func (r *recorder) Flush() {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Hijack hands the connection to exec/attach/port-forward upgrades.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.code == 0 {
		r.code = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

var (
	_ http.Flusher  = (*recorder)(nil)
	_ http.Hijacker = (*recorder)(nil)
)

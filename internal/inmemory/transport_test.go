package inmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func newTransport(t *testing.T, h http.Handler, mod ...func(*Config)) *Transport {
	t.Helper()
	cfg := Config{Handler: h, Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mod {
		m(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return tr
}

// closeTracker is a request body that remembers being closed.
type closeTracker struct {
	io.Reader
	mu     sync.Mutex
	closed bool
}

func (c *closeTracker) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *closeTracker) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// TestRequestAsServerSeesIt: the handler gets what net/http's server
// would give it, and the client's request is left as it was.
func TestRequestAsServerSeesIt(t *testing.T) {
	type seen struct {
		method, uri, path, query, host, remote, proto, body, auth string
		major                                                     int
		tls                                                       bool
		length                                                    int64
	}
	got := make(chan seen, 1)
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{method: r.Method, uri: r.RequestURI, path: r.URL.Path, query: r.URL.RawQuery, host: r.Host, remote: r.RemoteAddr,
			proto: r.Proto, major: r.ProtoMajor, tls: r.TLS != nil, length: r.ContentLength, body: string(b), auth: r.Header.Get("Authorization")}
		// What authentication does: the client's header must not change.
		r.Header.Del("Authorization")
		w.WriteHeader(http.StatusCreated)
	}))
	body := &closeTracker{Reader: strings.NewReader(`{"kind":"ConfigMap"}`)}
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1:6443/api/v1/namespaces/a%2Fb/configmaps?fieldManager=x&dryRun=All", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 20
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s := <-got
	// The body is closed once the handler is done; Shutdown waits for that.
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := seen{method: "POST", uri: "/api/v1/namespaces/a%2Fb/configmaps?fieldManager=x&dryRun=All", path: "/api/v1/namespaces/a/b/configmaps",
		query: "fieldManager=x&dryRun=All", host: "127.0.0.1:6443", remote: DefaultRemoteAddr, proto: "HTTP/2.0", major: 2,
		length: 20, body: `{"kind":"ConfigMap"}`, auth: "Bearer secret"}
	if s != want {
		t.Errorf("handler saw\n %+v\nwant\n %+v", s, want)
	}
	if resp.StatusCode != http.StatusCreated || resp.Status != "201 Created" || resp.Proto != "HTTP/2.0" || resp.Request != req || resp.TLS != nil {
		t.Errorf("response %d %q %q, request %p (want %p)", resp.StatusCode, resp.Status, resp.Proto, resp.Request, req)
	}
	if req.Header.Get("Authorization") != "Bearer secret" {
		t.Error("the handler's edit of its header reached the client's request")
	}
	if !body.isClosed() {
		t.Error("the request body was not closed")
	}
}

// TestResponses: status, headers, ContentLength and body for complete
// and streamed responses, as a net/http client would see them.
func TestResponses(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	tests := []struct {
		name      string
		method    string
		handler   http.HandlerFunc
		code      int
		length    int64
		body      []byte
		readErr   error
		header    map[string]string
		threshold int
	}{{
		name:    "nothing written",
		handler: func(http.ResponseWriter, *http.Request) {},
		code:    200, length: 0, body: nil,
	}, {
		name: "small JSON",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":`))
			_, _ = w.Write([]byte(`"Status"}`))
		},
		code: 404, length: 17, body: []byte(`{"kind":"Status"}`), header: map[string]string{"Content-Type": "application/json"},
	}, {
		name:    "sniffed content type",
		handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html></html>")) },
		code:    200, length: 13, body: []byte("<html></html>"), header: map[string]string{"Content-Type": "text/html; charset=utf-8"},
	}, {
		name: "large body streams",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			for i := 0; i < len(big); i += 4096 {
				if _, err := w.Write(big[i : i+4096]); err != nil {
					panic(err)
				}
			}
		},
		code: 200, length: -1, body: big,
	}, {
		name:    "one large write",
		handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(big) },
		code:    200, length: -1, body: big, header: map[string]string{"Content-Type": "text/plain; charset=utf-8"},
	}, {
		name: "declared length streams with it",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			_, _ = w.Write(big)
		},
		code: 200, length: int64(len(big)), body: big,
	}, {
		name: "short of its Content-Length",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "10")
			_, _ = w.Write([]byte("abc"))
		},
		code: 200, length: 10, body: []byte("abc"), readErr: io.ErrUnexpectedEOF,
	}, {
		name: "beyond its Content-Length",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "2")
			if _, err := w.Write([]byte("abc")); !errors.Is(err, http.ErrContentLength) {
				panic(fmt.Sprintf("Write = %v, want ErrContentLength", err))
			}
			_, _ = w.Write([]byte("ab"))
		},
		code: 200, length: 2, body: []byte("ab"),
	}, {
		name: "204 refuses a body",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			if _, err := w.Write([]byte("x")); !errors.Is(err, http.ErrBodyNotAllowed) {
				panic(fmt.Sprintf("Write = %v, want ErrBodyNotAllowed", err))
			}
		},
		code: 204, length: 0,
	}, {
		name:   "HEAD drops the body",
		method: http.MethodHead,
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("hello"))
		},
		code: 200, length: 5,
	}, {
		name: "informational then final",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusTeapot) // superfluous
		},
		code: 202, length: 0,
	}, {
		name: "header changes after the flush are not sent",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-A", "1")
			w.(http.Flusher).Flush()
			w.Header().Set("X-A", "2")
			_, _ = w.Write([]byte("x"))
		},
		code: 200, length: -1, body: []byte("x"), header: map[string]string{"X-A": "1"},
	}, {
		name:      "tiny threshold",
		threshold: 3,
		handler: func(w http.ResponseWriter, _ *http.Request) {
			for range 10 {
				_, _ = w.Write([]byte("ab"))
			}
		},
		code: 200, length: -1, body: []byte(strings.Repeat("ab", 10)),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTransport(t, tc.handler, func(c *Config) { c.FlushThreshold = tc.threshold })
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, "http://x/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if !errors.Is(err, tc.readErr) {
				t.Errorf("reading the body: %v, want %v", err, tc.readErr)
			}
			if resp.StatusCode != tc.code || resp.ContentLength != tc.length {
				t.Errorf("code %d, ContentLength %d; want %d, %d", resp.StatusCode, resp.ContentLength, tc.code, tc.length)
			}
			if !bytes.Equal(b, tc.body) {
				t.Errorf("body of %d bytes, want %d", len(b), len(tc.body))
			}
			for k, v := range tc.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// watchHandler streams ConfigMap watch events as the API server does (JSON,
// one flush per event), sending each only when next allows it, and
// reports on ended when its context is done.
func watchHandler(next <-chan string, ended chan<- error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || r.URL.Path != "/api/v1/namespaces/ns/configmaps" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		enc := json.NewEncoder(w)
		for {
			select {
			case <-r.Context().Done():
				ended <- r.Context().Err()
				return
			case name := <-next:
				obj, _ := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "1"}})
				if err := enc.Encode(map[string]any{"type": "ADDED", "object": json.RawMessage(obj)}); err != nil {
					ended <- err
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}
}

// TestWatchStreamsThroughClientGo: client-go's watch decoder gets each
// event as the handler flushes it (the next is not sent before the
// previous arrived), and stopping the watch ends the handler's context.
func TestWatchStreamsThroughClientGo(t *testing.T) {
	next, ended := make(chan string), make(chan error, 1)
	tr := newTransport(t, watchHandler(next, ended))
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: "https://127.0.0.1:6443", Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("ns").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		next <- name
		select {
		case ev := <-w.ResultChan():
			if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || !ok || cm.Name != name {
				t.Fatalf("event %s %#v, want ADDED %s", ev.Type, ev.Object, name)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %s did not arrive: the response is not streaming", name)
		}
	}
	w.Stop()
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stopping the watch did not end the handler")
	}
}

// TestCancellation: the client's context, the response body's Close and
// the transport's shutdown each end the handler's context; a handler
// blocked writing to a client that stopped reading is let go.
func TestCancellation(t *testing.T) {
	type when int
	const (
		beforeHeaders when = iota
		whileStreaming
		bodyClosed
		blockedWriter
		shutdown
		baseContext
	)
	for _, tc := range []struct {
		name string
		when when
	}{{"client context before headers", beforeHeaders}, {"client context while streaming", whileStreaming},
		{"body closed", bodyClosed}, {"handler blocked on a write", blockedWriter}, {"shutdown", shutdown}, {"base context", baseContext}} {
		t.Run(tc.name, func(t *testing.T) {
			ended := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.when != beforeHeaders {
					w.(http.Flusher).Flush()
				}
				if tc.when == blockedWriter {
					// Nobody reads: the pipe write blocks until the
					// client goes away.
					_, err := w.Write(bytes.Repeat([]byte("x"), 1<<20))
					ended <- err
					return
				}
				<-r.Context().Done()
				ended <- context.Cause(r.Context())
			})
			base, cancelBase := context.WithCancel(context.Background())
			defer cancelBase()
			tr := newTransport(t, h, func(c *Config) { c.BaseContext = base })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/watch", nil)
			if tc.when == beforeHeaders {
				time.AfterFunc(50*time.Millisecond, cancel)
				if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
					t.Fatalf("RoundTrip = %v, want context.Canceled", err)
				}
			} else {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				switch tc.when {
				case whileStreaming, blockedWriter:
					cancel()
				case bodyClosed:
					resp.Body.Close()
				case shutdown:
					go func() { _ = tr.Shutdown(context.Background()) }()
				case baseContext:
					cancelBase()
				}
				if tc.when == blockedWriter {
					// The cancellation reaches the pipe asynchronously: a
					// read started at once could drain the pipe and let the
					// write finish first. Wait until the write has failed
					// (and hand its error on to the check below).
					select {
					case err := <-ended:
						ended <- err
					case <-time.After(10 * time.Second):
						t.Fatal("the blocked write did not end")
					}
				}
				if tc.when == whileStreaming || tc.when == blockedWriter {
					if _, err := io.ReadAll(resp.Body); err == nil {
						t.Error("reading a cancelled stream: no error")
					}
				}
				if tc.when == shutdown || tc.when == baseContext {
					// The stream ends (EOF, or an error if the end beat
					// the handler's return), never hangs.
					_, _ = io.ReadAll(resp.Body)
				}
				resp.Body.Close()
			}
			select {
			case err := <-ended:
				if err == nil {
					t.Error("handler ended without an error")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the handler was not ended")
			}
		})
	}
}

// TestClientTimeout: http.Client's Timeout (client-go's rest.Config.Timeout)
// ends the exchange through the request's context; CancelRequest, which
// the client calls too, has nothing left to do.
func TestClientTimeout(t *testing.T) {
	ended := make(chan error, 1)
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		ended <- r.Context().Err()
	}))
	c := &http.Client{Transport: tr, Timeout: 100 * time.Millisecond}
	resp, err := c.Get("http://x/watch")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Fatal("a stream past the client's timeout ended without an error")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("handler ended with %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client's timeout did not end the handler")
	}
}

// TestShutdownRefusesNewRequests: after Shutdown, RoundTrip fails at once
// and closes the body, as a stopped server refuses connections.
func TestShutdownRefusesNewRequests(t *testing.T) {
	tr := newTransport(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler called after Shutdown") }))
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	body := &closeTracker{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, "http://x/", body)
	if _, err := tr.RoundTrip(req); !errors.Is(err, ErrClosed) {
		t.Errorf("RoundTrip = %v, want ErrClosed", err)
	}
	if !body.isClosed() {
		t.Error("body not closed")
	}
}

// syncBuffer is a log destination the handler goroutine writes and the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPanics: a panic before the response is a logged 500 Status; after
// it, a logged, aborted stream; http.ErrAbortHandler aborts silently. The
// process survives all of them.
func TestPanics(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handler   http.HandlerFunc
		wantCode  int   // 0: RoundTrip fails
		wantRead  error // error reading the body
		wantLog   bool
		wantRTErr error
	}{{
		name:     "before the response",
		handler:  func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("partial")); panic("boom") },
		wantCode: 500, wantLog: true,
	}, {
		name: "after the response began",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
			panic("boom")
		},
		wantCode: 200, wantRead: ErrAborted, wantLog: true,
	}, {
		name:      "ErrAbortHandler before",
		handler:   func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) },
		wantRTErr: ErrAborted,
	}, {
		name: "ErrAbortHandler after",
		handler: func(w http.ResponseWriter, _ *http.Request) {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		},
		wantCode: 200, wantRead: ErrAborted,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			tr := newTransport(t, tc.handler, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			req, _ := http.NewRequest(http.MethodGet, "http://x/api/v1/pods", nil)
			resp, err := tr.RoundTrip(req)
			if tc.wantCode == 0 {
				if !errors.Is(err, tc.wantRTErr) {
					t.Fatalf("RoundTrip = %v, want %v", err, tc.wantRTErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.wantCode || !errors.Is(err, tc.wantRead) {
					t.Fatalf("code %d, read error %v; want %d, %v", resp.StatusCode, err, tc.wantCode, tc.wantRead)
				}
				if tc.wantCode == 200 && tc.wantLog && string(b) != "partial" {
					t.Errorf("read %q before the abort, want what was flushed", b)
				}
				if tc.wantCode == 500 {
					var st metav1.Status
					if err := json.Unmarshal(b, &st); err != nil || st.Kind != "Status" || st.Reason != metav1.StatusReasonInternalError || st.Code != 500 {
						t.Errorf("500 body %s (%v), want an InternalError Status", b, err)
					}
					if se := apierrors.FromObject(&st); !apierrors.IsInternalError(se) {
						t.Errorf("client-go reads %v, want an internal error", se)
					}
				}
			}
			// Synchronize with the handler's end before reading the log.
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			logged := strings.Contains(logs.String(), "panic serving in-memory request") && strings.Contains(logs.String(), "boom")
			if logged != tc.wantLog {
				t.Errorf("logged = %v, want %v: %s", logged, tc.wantLog, logs.String())
			}
		})
	}
}

// TestUpgradeRefused: exec-style upgrades fail at once with ErrUpgrade,
// never reach the handler and never hang; the writer is no Hijacker.
func TestUpgradeRefused(t *testing.T) {
	hijackable := make(chan error, 1)
	tr := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/upgrade" {
			t.Error("an upgrade reached the handler")
		}
		if _, ok := w.(http.Hijacker); ok {
			hijackable <- errors.New("the ResponseWriter is a Hijacker")
			return
		}
		_, _, err := http.NewResponseController(w).Hijack()
		hijackable <- err
	}))
	for _, h := range []http.Header{
		{"Connection": {"Upgrade"}, "Upgrade": {"SPDY/3.1"}},
		{"Connection": {"keep-alive, upgrade"}},
		{"Upgrade": {"websocket"}},
	} {
		body := &closeTracker{Reader: strings.NewReader("")}
		req, _ := http.NewRequest(http.MethodPost, "http://x/upgrade", body)
		req.Header = h
		if _, err := tr.RoundTrip(req); !errors.Is(err, ErrUpgrade) {
			t.Errorf("%v: RoundTrip = %v, want ErrUpgrade", h, err)
		}
		if !body.isClosed() {
			t.Errorf("%v: body not closed", h)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, "http://x/plain", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-hijackable; !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("Hijack = %v, want ErrNotSupported", err)
	}
}

// TestConcurrentRequestsLeaveNothingBehind: many concurrent requests of
// every shape (small, large, watches cancelled midway), then goroutines
// are back to where they were; many requests on one long-lived context
// leave no memory on it.
func TestConcurrentRequestsLeaveNothingBehind(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	big := bytes.Repeat([]byte("y"), 256<<10)
	tr, err := New(Config{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/small":
			_, _ = w.Write(body)
		case "/big":
			_, _ = w.Write(big)
		case "/watch":
			for i := 0; r.Context().Err() == nil; i++ {
				fmt.Fprintf(w, "event %d\n", i)
				w.(http.Flusher).Flush()
			}
		}
	})})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			path := []string{"/small", "/big", "/watch"}[i%3]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://x"+path, strings.NewReader(fmt.Sprint(i)))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			switch path {
			case "/small":
				if b, _ := io.ReadAll(resp.Body); string(b) != fmt.Sprint(i) {
					errs <- fmt.Errorf("request %d got %q", i, b)
				}
			case "/big":
				if b, _ := io.ReadAll(resp.Body); len(b) != len(big) {
					errs <- fmt.Errorf("request %d got %d bytes", i, len(b))
				}
			case "/watch":
				buf := make([]byte, 64)
				if _, err := io.ReadAtLeast(resp.Body, buf, 20); err != nil {
					errs <- err
				}
				if i%2 == 0 {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A client's long-lived context (an informer's) must not keep a
	// callback per finished request.
	tr2 := newTransport(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	do := func(k int) {
		for range k {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x/", nil)
			resp, err := tr2.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	do(1000)
	before := heapInUse()
	do(20000)
	if grown := heapInUse() - before; grown > 1<<20 {
		t.Errorf("the heap grew by %d bytes over 20,000 finished requests on one context", grown)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestNewValidates: a Transport needs a handler.
func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a handler: want an error")
	}
}

package filters

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync/atomic"
	"testing"
)

// TestProbabilisticGoaway runs the filter in a real HTTP/2 server: a
// chosen request completes normally and its connection is then closed
// (GOAWAY), so the client's next request opens a new connection, as it
// would through a load balancer to another server. Watches are never
// chosen; HTTP/1 is left alone.
func TestProbabilisticGoaway(t *testing.T) {
	var roll atomic.Value // float64 the next Rand call returns
	roll.Store(0.5)
	h := Chain(okHandler, WithRequestInfo, WithProbabilisticGoaway(GoawayConfig{Chance: 0.02, Rand: func() float64 { return roll.Load().(float64) }}))
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	h2 := srv.Client()
	defer h2.CloseIdleConnections()

	// get sends one request and says whether it used a new connection
	// and whether the answer asked to close it (seen in HTTP/1 only: in
	// HTTP/2 the server turns it into GOAWAY, which the next request's
	// new connection shows).
	get := func(c *http.Client, path string) (newConn, closed bool) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { newConn = !i.Reused },
		}))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(resp.Proto) == "" {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if want := map[bool]int{true: 2, false: 1}[c == h2]; resp.ProtoMajor != want {
			t.Fatalf("GET %s spoke %s, want HTTP/%d", path, resp.Proto, want)
		}
		return newConn, resp.Close || resp.Header.Get("Connection") == "close"
	}

	get(h2, "/api/v1/pods") // opens the connection
	for _, c := range []struct {
		name        string
		roll        float64
		path        string
		wantNewNext bool
	}{
		{"not chosen", 0.5, "/api/v1/pods", false},
		{"chosen", 0.01, "/api/v1/pods", true},
		{"chosen watch", 0.0, "/api/v1/pods?watch=1", false},
		{"chosen get", 0.0, "/api/v1/namespaces/default/configmaps/x", true},
		{"not chosen at the boundary", 0.02, "/api/v1/pods", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			roll.Store(c.roll)
			get(h2, c.path)
			roll.Store(0.5)
			if newConn, _ := get(h2, "/api/v1/pods"); newConn != c.wantNewNext {
				t.Fatalf("next request on a new connection: %v, want %v", newConn, c.wantNewNext)
			}
		})
	}

	t.Run("HTTP/1 is left alone", func(t *testing.T) {
		h1 := &http.Client{Transport: srv.Client().Transport.(*http.Transport).Clone()}
		h1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
		h1.Transport.(*http.Transport).TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		h1.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
		defer h1.CloseIdleConnections()
		roll.Store(0.0)
		if _, closed := get(h1, "/api/v1/pods"); closed {
			t.Fatal("an HTTP/1 request was told to close")
		}
	})

	t.Run("zero chance is no filter", func(t *testing.T) {
		f := WithProbabilisticGoaway(GoawayConfig{Chance: 0, Rand: func() float64 { return 0 }})
		w := serve(f(okHandler), httptest.NewRequest("GET", "/api/v1/pods", nil))
		if w.Header().Get("Connection") != "" {
			t.Fatal("Connection header set with chance 0")
		}
	})
}

// TestProbabilisticGoawayDefaultRand: with the real random source, about
// the configured share of requests is chosen.
func TestProbabilisticGoawayDefaultRand(t *testing.T) {
	h := Chain(okHandler, WithRequestInfo, WithProbabilisticGoaway(GoawayConfig{Chance: 0.02}))
	chosen := 0
	const n = 10_000
	for range n {
		r := httptest.NewRequest("GET", "/api/v1/pods", nil)
		r.ProtoMajor, r.Proto = 2, "HTTP/2.0"
		if serve(h, r).Header().Get("Connection") == "close" {
			chosen++
		}
	}
	// Expected 200, standard deviation 14: 100-300 fails about never.
	if chosen < 100 || chosen > 300 {
		t.Fatalf("%d of %d chosen, want about 2%%", chosen, n)
	}
}

// BenchmarkProbabilisticGoaway is the filter's per-request cost over
// WithRequestInfo alone (the baseline), which it needs before it.
func BenchmarkProbabilisticGoaway(b *testing.B) {
	r := httptest.NewRequest("GET", "/api/v1/namespaces/default/pods", nil)
	r.ProtoMajor, r.Proto = 2, "HTTP/2.0"
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"baseline", Chain(okHandler, WithRequestInfo)},
		{"chance 0.02", Chain(okHandler, WithRequestInfo, WithProbabilisticGoaway(GoawayConfig{Chance: 0.02}))},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(w, r)
			}
		})
	}
}

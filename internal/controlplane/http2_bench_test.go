package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"golang.org/x/net/http2"
)

// BenchmarkHTTP2IdleStreams is the cost of one small flushed write (a watch
// event) on a connection that also holds idle streams (other watches), with
// net/http's HTTP/2 server and with the server configureHTTP2 sets up.
func BenchmarkHTTP2IdleStreams(b *testing.B) {
	for _, server := range []string{"net-http", "myriad"} {
		for _, idle := range []int{0, 100, 999} {
			b.Run(fmt.Sprintf("server=%s/idle=%d", server, idle), func(b *testing.B) {
				benchmarkIdleStreams(b, server == "myriad", idle)
			})
		}
	}
}

func benchmarkIdleStreams(b *testing.B, configured bool, idle int) {
	chunk := make([]byte, 256)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if r.URL.Path == "/idle" {
			<-r.Context().Done()
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for range n {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	ts.EnableHTTP2 = true
	if configured {
		if err := configureHTTP2(ts.Config); err != nil {
			b.Fatal(err)
		}
	} else {
		ts.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreamsPerConnection}
	}
	ts.StartTLS()
	defer ts.Close()

	tlsConf := ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tlsConf.NextProtos = []string{"h2"}
	conn, err := tls.Dial("tcp", ts.Listener.Addr().String(), tlsConf)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	cc, err := (&http2.Transport{}).NewClientConn(conn)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := func(path string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
		resp, err := cc.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		return resp
	}
	for range idle {
		defer get("/idle").Body.Close()
	}
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	resp := get("/stream?n=" + strconv.Itoa(b.N))
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != int64(b.N*len(chunk)) {
		b.Fatalf("read %d bytes (%v), want %d", n, err, b.N*len(chunk))
	}
}

package inmemory

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkRoundTrip is the transport's own cost per request, against a
// handler that answers 1 KiB (a small object) or 1 MiB (a LIST page),
// beside the same over TLS and HTTP/2 on loopback (httptest), which is
// what in-process clients paid before.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = w.Write(body)
		})
		name := map[int]string{1 << 10: "1KiB", 1 << 20: "1MiB"}[size]
		b.Run("memory/"+name, func(b *testing.B) {
			tr, err := New(Config{Handler: h})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = tr.Shutdown(context.Background()) }()
			benchClient(b, &http.Client{Transport: tr}, "https://127.0.0.1:6443/api/v1/namespaces/default/pods/p", size)
		})
		b.Run("tls-h2/"+name, func(b *testing.B) {
			srv := httptest.NewUnstartedServer(h)
			srv.EnableHTTP2 = true
			srv.StartTLS()
			defer srv.Close()
			benchClient(b, srv.Client(), srv.URL+"/api/v1/namespaces/default/pods/p", size)
		})
	}
}

func benchClient(b *testing.B, c *http.Client, url string, size int) {
	buf := make([]byte, 0, size+512)
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		buf = buf[:0]
		w := bytes.NewBuffer(buf)
		n, err := io.Copy(w, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(size) {
			b.Fatalf("read %d bytes: %v", n, err)
		}
	}
}

// BenchmarkWatchEvent is the transport's cost per event of a stream: the
// handler writes and flushes one 1 KiB event per op (a watch), the client
// reads it in 4 KiB reads, as client-go's framer does.
func BenchmarkWatchEvent(b *testing.B) {
	event := bytes.Repeat([]byte("e"), 1<<10)
	run := func(b *testing.B, c *http.Client, url string, next chan struct{}) {
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		buf := make([]byte, 4096)
		b.ReportAllocs()
		b.SetBytes(int64(len(event)))
		for b.Loop() {
			next <- struct{}{}
			for got := 0; got < len(event); {
				n, err := resp.Body.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				got += n
			}
		}
	}
	handler := func(next chan struct{}) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-next:
					_, _ = w.Write(event)
					w.(http.Flusher).Flush()
				}
			}
		}
	}
	b.Run("memory", func(b *testing.B) {
		next := make(chan struct{})
		tr, err := New(Config{Handler: handler(next)})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = tr.Shutdown(context.Background()) }()
		run(b, &http.Client{Transport: tr}, "https://127.0.0.1:6443/api/v1/pods?watch=true", next)
	})
	b.Run("tls-h2", func(b *testing.B) {
		next := make(chan struct{})
		srv := httptest.NewUnstartedServer(handler(next))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		run(b, srv.Client(), srv.URL+"/api/v1/pods?watch=true", next)
	})
}

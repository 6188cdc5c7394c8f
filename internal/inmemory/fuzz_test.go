package inmemory

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzRoundTrip: whatever a client sends (method, URI, headers, body),
// RoundTrip answers or fails with an error, never panics or hangs, and
// the handler sees the body the client sent.
func FuzzRoundTrip(f *testing.F) {
	f.Add("GET", "/api/v1/pods?watch=true", "keep-alive", []byte(nil), uint16(0))
	f.Add("POST", "/api/v1/namespaces/a%2Fb/configmaps", "", []byte(`{"kind":"ConfigMap"}`), uint16(5))
	f.Add("HEAD", "/healthz", "Upgrade", []byte("x"), uint16(40000))
	f.Add("PATCH", "//x/../y?%zz", "close, upgrade", bytes.Repeat([]byte("z"), 70000), uint16(1))
	var echoed bytes.Buffer
	tr, err := New(Config{FlushThreshold: 1024, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed.Reset()
		_, _ = io.Copy(&echoed, r.Body)
		flushes := len(r.Header.Get("X-Flushes"))
		for i := range flushes {
			_, _ = w.Write(echoed.Bytes())
			if i%2 == 0 {
				w.(http.Flusher).Flush()
			}
		}
		_, _ = w.Write(echoed.Bytes())
	})})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	f.Fuzz(func(t *testing.T, method, uri, connection string, body []byte, flushes uint16) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, "https://127.0.0.1:6443"+uri, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Connection", connection)
		req.Header.Set("X-Flushes", strings.Repeat("f", int(flushes%8)))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			if !errors.Is(err, ErrUpgrade) {
				t.Fatalf("RoundTrip: %v", err)
			}
			return
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if method == http.MethodHead {
			if len(got) != 0 {
				t.Fatalf("HEAD answered %d bytes", len(got))
			}
			return
		}
		want := bytes.Repeat(body, int(flushes%8)+1)
		if !bytes.Equal(got, want) {
			t.Fatalf("got %d bytes, want %d", len(got), len(want))
		}
	})
}

package kubeletserver

import (
	"context"
	"io"
	"net/url"
	"runtime"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// BenchmarkContainerLogs is one GET of ten log lines over a kept-alive TLS
// connection, as the API server's pods/log makes them (client and server
// in this process).
func BenchmarkContainerLogs(b *testing.B) {
	ts := newTestServer(b, nil)
	client := ts.httpClient(b, &ts.pki.apiserverCert)
	u := ts.url + "/containerLogs/default/web/app?tailLines=10"
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Get(u)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("%d, %d bytes", resp.StatusCode, n)
		}
	}
}

// BenchmarkExecRoundTrip is one exec of `echo hi` over SPDY: a new TLS
// connection, the upgrade, the streams, the output and the exit status,
// as each exec the API server forwards costs (client and server).
func BenchmarkExecRoundTrip(b *testing.B) {
	ts := newTestServer(b, nil)
	u, _ := url.Parse(ts.url + "/exec/default/web/app?command=echo&command=hi&output=1&error=1")
	e, err := remotecommand.NewSPDYExecutor(ts.restConfig(), "POST", u)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := e.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenExecStream measures what an open, idle exec stream (`cat`
// waiting on stdin) holds, over SPDY and over WebSocket: heap bytes and
// goroutines per stream, client and server sides together, since both are
// in this process. Over SPDY most of it is spdystream's zlib header
// compressor, one per connection end. Each iteration opens 100 streams:
// run it with -benchtime=1x.
func BenchmarkOpenExecStream(b *testing.B) {
	for proto, newExec := range executors {
		b.Run(proto, func(b *testing.B) {
			ts := newTestServer(b, nil)
			u, _ := url.Parse(ts.url + "/exec/default/web/app?command=cat&input=1&output=1&error=1")
			const streams = 100
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				g0 := runtime.NumGoroutine()
				done := make(chan error, streams)
				writers := make([]*io.PipeWriter, streams)
				for i := range streams {
					e := newExec(b, ts.restConfig(), "POST", u)
					pr, pw := io.Pipe()
					writers[i] = pw
					go func() {
						done <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: pr, Stdout: io.Discard, Stderr: io.Discard})
					}()
					if _, err := pw.Write([]byte("x")); err != nil { // the stream is up once cat has read it
						b.Fatal(err)
					}
				}
				time.Sleep(100 * time.Millisecond)
				runtime.GC()
				runtime.ReadMemStats(&ms1)
				g1 := runtime.NumGoroutine()
				b.ReportMetric(float64(ms1.HeapInuse-ms0.HeapInuse)/streams, "heap-bytes/stream")
				b.ReportMetric(float64(g1-g0)/streams, "goroutines/stream")
				for _, pw := range writers {
					pw.Close()
				}
				cancel() // WebSocket v4 cannot close stdin; the client leaves instead
				for range streams {
					<-done
				}
			}
		})
	}
}

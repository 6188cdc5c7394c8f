package filters

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestClientDisconnectCancelsContext proves the chain keeps net/http's
// promise: when the client goes away, the handler's context is cancelled,
// so a slow list or a watch stops consuming the server.
func TestClientDisconnectCancelsContext(t *testing.T) {
	inflight, err := WithMaxInFlight(MaxInFlightConfig{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := WithMetrics(MetricsConfig{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/v1/pods", "/api/v1/pods?watch=true"} {
		t.Run(path, func(t *testing.T) {
			entered := make(chan struct{})
			cancelled := make(chan error, 1)
			slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(entered)
				select {
				case <-r.Context().Done():
					cancelled <- r.Context().Err()
				case <-time.After(30 * time.Second):
					cancelled <- fmt.Errorf("context not cancelled")
				}
			})
			h := Chain(slow, WithPanicRecovery(nil), WithRequestInfo, metrics, WithLogging(nil),
				WithRequestDeadline(time.Minute), WithBodyLimit(0), inflight)
			srv := httptest.NewServer(h)
			defer srv.Close()

			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatal("handler not reached")
			}
			conn.Close()
			select {
			case err := <-cancelled:
				if err == nil || err.Error() != "context canceled" {
					t.Fatalf("handler saw %v, want context canceled", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("handler never saw cancellation")
			}
		})
	}
}

// TestClientCancelOverHTTP2 covers the transport kubectl and client-go
// actually use: cancelling one request resets its stream, and the handler's
// context is cancelled while the shared connection lives on.
func TestClientCancelOverHTTP2(t *testing.T) {
	entered := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	h := Chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") == "" {
			return
		}
		entered <- struct{}{}
		select {
		case <-r.Context().Done():
			cancelled <- struct{}{}
		case <-time.After(30 * time.Second):
		}
	}), WithPanicRecovery(nil), WithRequestInfo, WithRequestDeadline(time.Minute))
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/pods?slow=1", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not reached")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("handler never saw cancellation")
	}
	<-errc
	// The connection survived the reset stream.
	resp, err := client.Get(srv.URL + "/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("follow-up request: %s %d", resp.Proto, resp.StatusCode)
	}
}

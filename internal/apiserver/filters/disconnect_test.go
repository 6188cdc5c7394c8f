package filters

import (
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

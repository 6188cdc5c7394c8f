package sim

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// The simulator's own transports must keep what client-go's does: the
// kubeconfig's CA and bearer token, the user agent; HTTP/2 for the
// clientset, and for heartbeats HTTP/1.1 unless HeartbeatsOverHTTP2.
func TestTransportsKeepCredentials(t *testing.T) {
	type seen struct {
		proto       int
		auth, agent string
	}
	got := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- seen{r.ProtoMajor, r.Header.Get("Authorization"), r.Header.Get("User-Agent")}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/leases/") {
			_, _ = w.Write([]byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"n1","resourceVersion":"2"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	for _, overHTTP2 := range []bool{false, true} {
		s, err := New(Config{
			RESTConfig:          &rest.Config{Host: srv.URL, BearerToken: "sekret", TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
			Nodes:               1,
			HeartbeatsOverHTTP2: overHTTP2,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := s.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
			t.Fatalf("get over the simulator's transport: %v", err)
		}
		if g, want := <-got, (seen{2, "Bearer sekret", "myriad-sim"}); g != want {
			t.Errorf("clientset: server saw %+v, want %+v", g, want)
		}

		lease := &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
		if _, err := s.beats.updateLease(ctx, lease); err != nil {
			t.Fatalf("renewal over the simulator's transport: %v", err)
		}
		want := seen{1, "Bearer sekret", "myriad-sim"}
		if overHTTP2 {
			want.proto = 2
		}
		if g := <-got; g != want {
			t.Errorf("renewal (HeartbeatsOverHTTP2 %v): server saw %+v, want %+v", overHTTP2, g, want)
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "1"}}
		if _, err := s.beats.updateNodeStatus(ctx, node); err != nil {
			t.Fatalf("status update over the simulator's transport: %v", err)
		}
		if g := <-got; g != want {
			t.Errorf("status update (HeartbeatsOverHTTP2 %v): server saw %+v, want %+v", overHTTP2, g, want)
		}
	}
}

// Renewals beyond heartbeatConns wait for a connection rather than dial more:
// a stalled server must not get a TLS handshake per queued renewal.
func TestLeaseConnectionsCapped(t *testing.T) {
	var conns, inFlight atomic.Int32
	release := make(chan struct{})
	full := make(chan struct{})
	srv, ca := countingTLSServer(t, &conns, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inFlight.Add(1) == heartbeatConns {
			close(full)
		}
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"n","resourceVersion":"2"}}`))
	}))
	s, err := New(Config{RESTConfig: &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}

	const renewals = 3 * heartbeatConns
	errs := make(chan error, renewals)
	for i := range renewals {
		go func() {
			_, err := s.beats.updateLease(context.Background(), &coordv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), ResourceVersion: "1"}})
			errs <- err
		}()
	}
	<-full
	time.Sleep(200 * time.Millisecond) // room for any dial beyond the cap
	if got := conns.Load(); got != heartbeatConns {
		t.Errorf("%d connections with %d renewals waiting on the server, want %d", got, renewals, heartbeatConns)
	}
	close(release)
	for range renewals {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got > heartbeatConns {
		t.Errorf("%d connections for %d renewals, want at most %d", got, renewals, heartbeatConns)
	}
}

// Nodes' requests spread over one connection per NodesPerConnection nodes
// (spreadConns); the simulator's own share the first.
func TestNodesSpreadOverConnections(t *testing.T) {
	for _, tc := range []struct {
		nodes, perConn int
		want           int32
	}{
		{nodes: 4, perConn: 0, want: 1}, // the default, 50
		{nodes: 4, perConn: 2, want: 2},
		{nodes: 4, perConn: 1, want: 4},
		{nodes: 5, perConn: 2, want: 3},
	} {
		t.Run(fmt.Sprintf("%d nodes, %d per connection", tc.nodes, tc.perConn), func(t *testing.T) {
			var conns atomic.Int32
			srv, ca := countingTLSServer(t, &conns, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.ProtoMajor != 2 {
					t.Errorf("request over HTTP/%d, want HTTP/2", r.ProtoMajor)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}}`))
			}))
			s, err := New(Config{
				RESTConfig: &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}},
				Nodes:      tc.nodes, NodesPerConnection: tc.perConn,
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for range 2 {
				for _, n := range s.nodes {
					if _, err := s.client.CoreV1().Nodes().Get(n.as(ctx), n.name, metav1.GetOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := s.client.CoreV1().Nodes().Get(ctx, "own", metav1.GetOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if got := conns.Load(); got != tc.want {
				t.Errorf("%d connections, want %d", got, tc.want)
			}
		})
	}
}

// countingTLSServer starts a TLS test server (HTTP/2 too if http2) that
// counts the connections it accepts in conns, closed when t ends. It
// returns the server and its CA certificate (PEM).
func countingTLSServer(t *testing.T, conns *atomic.Int32, http2 bool, h http.Handler) (*httptest.Server, []byte) {
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = http2
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

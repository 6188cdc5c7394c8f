package kubeletclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/kubeletclient/kubelettest"
)

func TestConnect(t *testing.T) {
	addrs := []corev1.NodeAddress{
		{Type: corev1.NodeExternalIP, Address: "203.0.113.7"},
		{Type: corev1.NodeInternalIP, Address: "10.0.0.7"},
		{Type: corev1.NodeHostName, Address: "node-7"},
	}
	for _, tc := range []struct {
		name      string
		types     []corev1.NodeAddressType
		addrs     []corev1.NodeAddress
		port      int32
		wantHost  string
		wantPort  string
		wantNoAdr bool
	}{
		{name: "default order prefers the InternalIP", addrs: addrs, port: 10250, wantHost: "10.0.0.7", wantPort: "10250"},
		{name: "upstream order prefers the hostname", types: []corev1.NodeAddressType{corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeInternalIP, corev1.NodeExternalDNS, corev1.NodeExternalIP}, addrs: addrs, port: 10250, wantHost: "node-7", wantPort: "10250"},
		{name: "InternalIP first", types: []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName}, addrs: addrs, port: 4321, wantHost: "10.0.0.7", wantPort: "4321"},
		{name: "falls through to a later type", types: []corev1.NodeAddressType{corev1.NodeInternalDNS, corev1.NodeExternalIP}, addrs: addrs, wantHost: "203.0.113.7", wantPort: "10250"},
		{name: "no port reported: the default", addrs: addrs[:1], wantHost: "203.0.113.7", wantPort: "10250"},
		{name: "no matching address", types: []corev1.NodeAddressType{corev1.NodeInternalDNS}, addrs: addrs, wantNoAdr: true},
		{name: "no address at all", wantNoAdr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{PreferredAddressTypes: tc.types})
			if err != nil {
				t.Fatal(err)
			}
			node := &corev1.Node{Status: corev1.NodeStatus{Addresses: tc.addrs}}
			node.Status.DaemonEndpoints.KubeletEndpoint.Port = tc.port
			conn, err := c.Connect(node)
			if tc.wantNoAdr {
				var na *NoAddressError
				if !errors.As(err, &na) || !reflect.DeepEqual(na.Addresses, tc.addrs) {
					t.Fatalf("want NoAddressError, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conn.Host != tc.wantHost || conn.Port != tc.wantPort || conn.Scheme != "https" || conn.Transport == nil || conn.InsecureTransport == nil {
				t.Fatalf("got %+v", conn)
			}
		})
	}
}

func TestParseAddressTypes(t *testing.T) {
	got, err := ParseAddressTypes("InternalIP, Hostname")
	if err != nil || !reflect.DeepEqual(got, []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", " , ", "InternalIP,Bogus", "internalip"} {
		if _, err := ParseAddressTypes(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

func TestNewRejects(t *testing.T) {
	for name, cfg := range map[string]Config{
		"cert without key":  {CertFile: "x.crt"},
		"missing CA file":   {CAFile: "/nonexistent/ca.crt"},
		"negative timeout":  {Timeout: -time.Second},
		"missing cert pair": {CertFile: "/nonexistent/a.crt", KeyFile: "/nonexistent/a.key"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// TestHeaderTimeout: headers later than the bound fail the request with
// ErrHeaderTimeout; a body slower than the bound does not.
func TestHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow-headers" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, "late body")
	}))
	defer srv.Close()
	defer close(release)
	rt := HeaderTimeout(http.DefaultTransport, 100*time.Millisecond)

	req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/slow-headers", nil)
	start := time.Now()
	if _, err := rt.RoundTrip(req); !errors.Is(err, ErrHeaderTimeout) {
		t.Fatalf("slow headers: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}

	req, _ = http.NewRequestWithContext(context.Background(), "GET", srv.URL+"/slow-body", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "late body" {
		t.Fatalf("slow body: %q, %v", body, err)
	}
}

// TestClientCertificateReload: a certificate replaced on disk is what the
// next handshake presents.
func TestClientCertificateReload(t *testing.T) {
	ca, err := kubelettest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	caFile, certFile, keyFile, err := ca.WriteClientFiles(dir, "first")
	if err != nil {
		t.Fatal(err)
	}
	kubelet, err := kubelettest.Start(ca, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	c, err := New(Config{CAFile: caFile, CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = kubelet.Port
	conn, err := c.Connect(node)
	if err != nil {
		t.Fatal(err)
	}
	get := func() string {
		t.Helper()
		resp, err := (&http.Client{Transport: conn.Transport}).Get("https://" + conn.HostPort() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		reqs := kubelet.Requests()
		return reqs[len(reqs)-1].ClientCN
	}
	if cn := get(); cn != "first" {
		t.Fatalf("presented %q", cn)
	}
	time.Sleep(10 * time.Millisecond) // a later modification time
	if _, _, _, err := ca.WriteClientFiles(dir, "second"); err != nil {
		t.Fatal(err)
	}
	c.secure.CloseIdleConnections() // the next request handshakes anew
	if cn := get(); cn != "second" {
		t.Fatalf("after rotation presented %q", cn)
	}
}

package apiserver

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkPodLog: one GET pods/log through the Server to a TLS kubelet
// (kubelettest, with a pooled keep-alive connection), three lines back.
// Allocations count the client, the Server and the test kubelet, all in
// this process.
func BenchmarkPodLog(b *testing.B) {
	e := newKubeletEnvTB(b, 5*time.Second)
	e.addNode("n1", e.kubelet.Port, loopback())
	e.addPod("p", "n1", "c")
	e.waitCached("p")
	url := e.srv.URL + "/api/v1/namespaces/default/pods/p/log?container=c"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}

// BenchmarkPodLogDirect is BenchmarkPodLog's baseline: the same log
// fetched from the test kubelet directly, over the same kind of pooled
// TLS connection. The difference is the API server's share.
func BenchmarkPodLogDirect(b *testing.B) {
	e := newKubeletEnvTB(b, 5*time.Second)
	cert, _, _, err := e.ca.Issue("bench", nil, false)
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, TLSClientConfig: &tls.Config{
		RootCAs: e.ca.Pool(), Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}}
	url := e.kubelet.URL + "/containerLogs/default/p/c"
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}

package aggregator_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/myriad-k8s/myriad/internal/pki"
)

// BenchmarkAggregatedGet measures what the aggregation layer adds to a
// request: a GET of the extension's flunders straight from the extension
// (with the front-proxy certificate, over one kept-alive TLS connection)
// against the same GET through the Myriad server (client TLS, the filter
// chain with authentication and authorization, the proxy and its TLS
// connection to the extension). local is a GET the server answers itself
// from its watch cache, for scale.
func BenchmarkAggregatedGet(b *testing.B) {
	s := startServer(b)
	e := startExtension(b, frontProxyCA(b, s))
	register(b, s, e)
	waitCondition(b, s, version+"."+group, apiregistrationv1.ConditionTrue, "Passed")
	path := "/apis/" + group + "/" + version + "/namespaces/default/flunders"

	run := func(b *testing.B, c *http.Client, url string) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		cert, err := tls.LoadX509KeyPair(filepath.Join(s.dataDir, pki.FrontProxyClientCertFile), filepath.Join(s.dataDir, pki.FrontProxyClientKeyFile))
		if err != nil {
			b.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(e.caPEM)
		c := &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: "wardle.default.svc", Certificates: []tls.Certificate{cert}}}}
		run(b, c, e.srv.URL+path)
	})
	b.Run("through-myriad", func(b *testing.B) {
		run(b, httpClient(b, s), s.rest.Host+path)
	})
	// /apis in the aggregated form kubectl asks for: the server's own
	// document (answered 304 to the aggregator's If-None-Match) merged
	// with the remote group, served from the merged cache.
	b.Run("discovery", func(b *testing.B) {
		c := httpClient(b, s)
		b.ReportAllocs()
		for b.Loop() {
			req, _ := http.NewRequest(http.MethodGet, s.rest.Host+"/apis", nil)
			req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "APIGroupDiscoveryList") {
				b.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
		}
	})
	b.Run("local", func(b *testing.B) {
		run(b, httpClient(b, s), s.rest.Host+"/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")
	})
}

package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func TestMetricsHealthAndAuth(t *testing.T) {
	s := shared
	// Generate a watch event so the watch metrics exist.
	c := s.client(t)
	mkNamespace(t, c, "metrics")
	out := s.mustKubectl(t, "", "get", "--raw", "/metrics")
	for _, name := range []string{
		"apiserver_request_total", "apiserver_request_duration_seconds", "apiserver_current_inflight_requests",
		"etcd_request_duration_seconds", "go_goroutines",
	} {
		if !strings.Contains(out, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if got := s.mustKubectl(t, "", "get", "--raw", "/readyz"); got != "ok" {
		t.Errorf("/readyz = %q", got)
	}
	if out := s.mustKubectl(t, "", "get", "--raw", "/debug/pprof/"); !strings.Contains(out, "goroutine") {
		t.Errorf("pprof index: %.200s", out)
	}
	// Without credentials: 401, except the public health paths.
	for _, tc := range []struct {
		path string
		want string
	}{{"/api/v1/pods", "Unauthorized"}, {"/metrics", "Unauthorized"}, {"/debug/pprof/", "Unauthorized"}, {"/readyz", "ok"}} {
		// The server's CA is not needed to check that it refuses us.
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := client.Get("https://127.0.0.1:" + strconv.Itoa(s.port) + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if out := string(body); !strings.Contains(out, tc.want) {
			t.Errorf("anonymous GET %s: %q, want %q", tc.path, out, tc.want)
		}
	}
}

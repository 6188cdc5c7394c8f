package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// topDeploymentYAML runs two pods that use 150m CPU and 64Mi on hollow
// nodes.
const topDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: top, namespace: agg-e2e}
spec:
  replicas: 2
  selector: {matchLabels: {app: top}}
  template:
    metadata:
      labels: {app: top}
      annotations: {sim.myriad.io/cpu-usage: 150m, sim.myriad.io/memory-usage: 64Mi}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: {requests: {cpu: 100m}}
`

// TestAggregation runs `myriad up` and `myriad sim --register-metrics-api`
// and reads the hollow nodes' metrics through the API server's
// aggregation layer with kubectl.
func TestAggregation(t *testing.T) {
	srv, err := startServer(filepath.Join(t.TempDir(), "agg"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.stop(); err != nil {
			t.Error(err)
		}
	})
	c := srv.client(t)
	ctx := context.Background()

	t.Run("kubectl get apiservices lists the local group versions", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "get", "apiservices")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Join(strings.Fields(lines[0]), " "); got != "NAME SERVICE AVAILABLE AGE" {
			t.Errorf("header %q", got)
		}
		for _, want := range []string{"v1. Local True", "v1.apps Local True", "v2.autoscaling Local True", "v1.apiregistration.k8s.io Local True"} {
			found := false
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				found = found || (len(f) == 4 && strings.Join(f[:3], " ") == want)
			}
			if !found {
				t.Errorf("kubectl get apiservices lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("kubectl explain apiservice", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "explain", "apiservice.spec.caBundle")
		if !strings.Contains(out, "APIService") || !strings.Contains(out, "caBundle") {
			t.Errorf("kubectl explain apiservice.spec.caBundle:\n%s", out)
		}
	})

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "sim", "--kubeconfig", srv.kubeconfig, "--nodes", "2", "--status-interval", "0",
		"--metrics-api-address", fmt.Sprintf("127.0.0.1:%d", port), "--register-metrics-api",
		"--pod-startup-delay", "200ms")
	var simOut safeBuffer
	cmd.Stdout, cmd.Stderr = &simOut, &simOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stopSim := func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
		}
	}
	t.Cleanup(stopSim)

	t.Run("the metrics APIService becomes available", func(t *testing.T) {
		var out string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			out, _ = srv.kubectl(t, "", "get", "apiservice", "v1beta1.metrics.k8s.io", "--no-headers")
			if f := strings.Fields(out); len(f) == 4 && f[1] == "kube-system/metrics-server" && f[2] == "True" {
				return
			}
		}
		t.Fatalf("v1beta1.metrics.k8s.io not available: %q\n%s", out, simOut.String())
	})

	t.Run("kubectl api-resources lists metrics.k8s.io", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "api-resources", "--api-group", "metrics.k8s.io")
		if !strings.Contains(out, "PodMetrics") || !strings.Contains(out, "NodeMetrics") {
			t.Errorf("kubectl api-resources --api-group metrics.k8s.io:\n%s", out)
		}
	})

	srv.mustKubectl(t, "", "create", "namespace", "agg-e2e")
	srv.mustKubectl(t, topDeploymentYAML, "apply", "-f", "-")

	t.Run("kubectl top pods", func(t *testing.T) {
		var out string
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			out, _ = srv.kubectl(t, "", "top", "pods", "-n", "agg-e2e", "--no-headers")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			ok := len(lines) == 2
			for _, l := range lines {
				f := strings.Fields(l)
				ok = ok && len(f) == 3 && strings.HasPrefix(f[0], "top-") && f[1] == "150m" && f[2] == "64Mi"
			}
			if ok {
				return
			}
		}
		t.Fatalf("kubectl top pods -n agg-e2e:\n%s", out)
	})

	t.Run("a namespace viewer may kubectl top", func(t *testing.T) {
		// The simulator's system:aggregated-metrics-reader is aggregated
		// into view, as metrics-server's manifests arrange.
		srv.mustKubectl(t, "", "-n", "agg-e2e", "create", "rolebinding", "jane-view", "--clusterrole=view", "--user=jane")
		var out string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			out, _ = srv.kubectl(t, "", "auth", "can-i", "list", "pods.metrics.k8s.io", "-n", "agg-e2e", "--as=jane")
			if strings.TrimSpace(out) == "yes" {
				break
			}
		}
		if strings.TrimSpace(out) != "yes" {
			t.Fatalf("jane (view) may not list pods.metrics.k8s.io: %q", out)
		}
		if out, err := srv.kubectl(t, "", "top", "pods", "-n", "agg-e2e", "--as=jane", "--no-headers"); err != nil || strings.Count(out, "150m") != 2 {
			t.Errorf("kubectl top pods --as=jane: %v\n%s", err, out)
		}
	})

	t.Run("kubectl top nodes", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "top", "nodes", "--no-headers")
		var nodes []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(l); len(f) >= 5 && strings.HasPrefix(f[0], "hollow-node-") {
				nodes = append(nodes, f[0])
			}
		}
		if len(nodes) != 2 {
			t.Errorf("kubectl top nodes:\n%s", out)
		}
	})

	t.Run("the metrics API refuses requests that skip the front proxy", func(t *testing.T) {
		// No front-proxy client certificate: 401, whatever the headers say.
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/apis/metrics.k8s.io/v1beta1/nodes", port), nil)
		req.Header.Set("X-Remote-User", "system:admin")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("direct request answered %d, want 401", resp.StatusCode)
		}
	})

	t.Run("the simulator gone, the APIService is unavailable", func(t *testing.T) {
		stopSim()
		var out string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			out, _ = srv.kubectl(t, "", "get", "apiservice", "v1beta1.metrics.k8s.io", "--no-headers")
			if f := strings.Fields(out); len(f) >= 3 && f[2] == "False" {
				break
			}
		}
		if !strings.Contains(out, "False (EndpointsNotFound)") {
			t.Fatalf("after the simulator stopped: %q", out)
		}
		hc, err := rest.HTTPClientFor(srv.restConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(srv.restConfig(t).Host + "/apis/metrics.k8s.io/v1beta1/nodes")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || string(body) != "service unavailable\n" {
			t.Errorf("metrics API without its server answered %d %q, want upstream's 503 \"service unavailable\"", resp.StatusCode, body)
		}
		// Discovery stays usable: kubectl reports the group as stale
		// rather than failing.
		if _, err := c.CoreV1().Namespaces().Get(ctx, "agg-e2e", metav1.GetOptions{}); err != nil {
			t.Error(err)
		}
	})
}

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/proxy/netlab"
)

// TestProxy runs `myriad proxy` as system:kube-proxy against the shared
// control plane, programming a "node" network namespace, and sends real
// traffic from a client namespace to a Service's backends in others.
func TestProxy(t *testing.T) {
	lab := netlab.New(t, 2)
	for _, b := range lab.Backends(2) {
		lab.Serve(b, 8080)
	}
	ctx := context.Background()
	c := shared.client(t)
	ns := "proxy-e2e"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}) }()
	svc, err := c.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setEndpoints := func(ips ...string) {
		t.Helper()
		s := &discovery.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: "web-manual", Namespace: ns,
				Labels:      map[string]string{discovery.LabelServiceName: "web", discovery.LabelManagedBy: "e2e.myriad"},
				Annotations: map[string]string{v1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
			AddressType: discovery.AddressTypeIPv4,
			Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
		}
		for _, ip := range ips {
			s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{ip}, NodeName: ptr.To("elsewhere")})
		}
		cur, err := c.DiscoveryV1().EndpointSlices(ns).Get(ctx, s.Name, metav1.GetOptions{})
		if err == nil {
			s.ResourceVersion = cur.ResourceVersion
			_, err = c.DiscoveryV1().EndpointSlices(ns).Update(ctx, s, metav1.UpdateOptions{})
		} else {
			_, err = c.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	setEndpoints("10.1.1.2", "10.1.2.2")

	// The proxy's node: /healthz reports it eligible for load-balanced
	// traffic only once the proxy has seen its Node, as upstream's does.
	if _, err := c.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.CoreV1().Nodes().Delete(ctx, "node-a", metav1.DeleteOptions{}) }()
	// A LoadBalancer Service with externalTrafficPolicy Local and one
	// endpoint on node-a: the proxy serves its health check node port.
	hcPort := 0
	for p := 32767; p > 30000 && hcPort == 0; p-- {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			l.Close()
			hcPort = p
		}
	}
	if _, err := c.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lb"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal,
			HealthCheckNodePort: int32(hcPort), Ports: []v1.ServicePort{{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discovery.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "lb-manual", Namespace: ns,
			Labels: map[string]string{discovery.LabelServiceName: "lb", discovery.LabelManagedBy: "e2e.myriad"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.1.1.2"}, NodeName: ptr.To("node-a")}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := shared.identityKubeconfig(t, "--user", "system:kube-proxy")
	healthPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	metricsPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	var log safeBuffer
	cmd := exec.Command(binary, "proxy", "--kubeconfig", kubeconfig, "--node", "node-a", "--families", "ipv4",
		"--netns", "/var/run/netns/"+lab.NS("node"),
		"--healthz-bind-address", fmt.Sprintf("127.0.0.1:%d", healthPort), "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--health-check-address", "127.0.0.1")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("myriad proxy exited with %v\n%s", err, log.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("myriad proxy did not stop on SIGTERM\n%s", log.String())
		}
	}()

	clusterIP := svc.Spec.ClusterIP + ":80"
	waitFor := func(what string, within time.Duration, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > within {
				t.Fatalf("%s: not within %s\nproxy log:\n%s", what, within, log.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Since(start)
	}
	waitFor("the Service's cluster IP answers", 20*time.Second, func() bool { return lab.Who("tcp4", clusterIP) != "" })

	got := lab.Tally("tcp4", clusterIP, 30)
	if got["be1"] < 3 || got["be2"] < 3 || got["be1"]+got["be2"] != 30 {
		t.Fatalf("30 connections to %s: %v, want both backends", clusterIP, got)
	}
	nodePort := fmt.Sprintf("10.0.0.1:%d", svc.Spec.Ports[0].NodePort)
	if got := lab.Tally("tcp4", nodePort, 6); got["be1"]+got["be2"] != 6 {
		t.Fatalf("NodePort %s from the client namespace: %v", nodePort, got)
	}

	setEndpoints("10.1.2.2")
	d := waitFor("traffic follows the EndpointSlice update", time.Second, func() bool {
		got := lab.Tally("tcp4", clusterIP, 6)
		return got["be2"] == 6
	})
	t.Logf("EndpointSlice update → traffic followed in %s", d)

	get := func(port int, path string) (int, string) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/livez"} {
		var body string
		waitFor(path+" answers 200", 5*time.Second, func() bool {
			var code int
			code, body = get(healthPort, path)
			return code == http.StatusOK
		})
		var h struct {
			Healthy      bool  `json:"healthy"`
			NodeEligible *bool `json:"nodeEligible"`
		}
		if err := json.Unmarshal([]byte(body), &h); err != nil || !h.Healthy || (path == "/healthz") != (h.NodeEligible != nil && *h.NodeEligible) {
			t.Errorf("%s: %s (%v)", path, body, err)
		}
	}
	var hcBody string
	waitFor("the health check node port answers 200", 5*time.Second, func() bool {
		var code int
		code, hcBody = get(hcPort, "/")
		return code == http.StatusOK
	})
	if !strings.Contains(hcBody, `"localEndpoints": 1`) {
		t.Errorf("health check node port: %s", hcBody)
	}
	if err := c.CoreV1().Services(ns).Delete(ctx, "lb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the health check node port closes with its Service", 5*time.Second, func() bool {
		code, _ := get(hcPort, "/")
		return code == 0
	})
	_, metrics := get(metricsPort, "/metrics")
	for _, m := range []string{"kubeproxy_sync_proxy_rules_duration_seconds_count", "kubeproxy_network_programming_duration_seconds_count",
		"kubeproxy_sync_proxy_rules_last_timestamp_seconds", `kubeproxy_proxy_healthz_total{code="200"}`} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	if strings.Contains(metrics, "kubeproxy_network_programming_duration_seconds_count 0") {
		t.Errorf("no network programming latency observed:\n%s", metrics)
	}
}

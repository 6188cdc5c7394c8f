package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func lbLocal(name string, n int64, hcPort int) *v1.Service {
	s := svc(name, n, v1.ServicePort{Name: "http", Port: 80, NodePort: 30000 + int32(n), Protocol: v1.ProtocolTCP})
	s.Spec.Type = v1.ServiceTypeLoadBalancer
	s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	s.Spec.HealthCheckNodePort = int32(hcPort)
	return s
}

func endpointsOn(name string, nodes ...string) *discovery.EndpointSlice {
	s := &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name + "-1", Labels: map[string]string{discovery.LabelServiceName: name}},
		AddressType: discovery.AddressTypeIPv4,
		Ports: []discovery.EndpointPort{
			{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)},
		},
	}
	for i, n := range nodes {
		s.Endpoints = append(s.Endpoints, discovery.Endpoint{Addresses: []string{fmt.Sprintf("10.244.0.%d", i+1)}, NodeName: ptr.To(n),
			Conditions: discovery.EndpointConditions{Ready: ptr.To(true)}})
	}
	return s
}

type hcAnswer struct {
	code   int
	weight string
	body   string
	err    error
}

func askHealthCheck(port int) hcAnswer {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		return hcAnswer{err: err}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return hcAnswer{code: resp.StatusCode, weight: resp.Header.Get("X-Load-Balancing-Endpoint-Weight"), body: string(b)}
}

func TestHealthCheckNodePorts(t *testing.T) {
	be := &memBackend{programs: map[types.NamespacedName]*ServiceView{}}
	ev := &events{}
	p, err := New(Config{NodeName: "n1", Families: []Family{IPv4}, Backend: be, Recorder: ev, FullSyncPeriod: -1,
		ServeHealthCheckNodePorts: true, HealthCheckHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetSynced()
	ctx := context.Background()
	port := freePort(t)

	// Two local ready pods (one serving two ports counts once) and a remote one.
	p.OnService(key("web"), lbLocal("web", 5, port))
	eps := endpointsOn("web", "n1", "n1", "n2")
	eps.Ports = append(eps.Ports, discovery.EndpointPort{Name: ptr.To("https"), Port: ptr.To[int32](8443), Protocol: ptr.To(v1.ProtocolTCP)})
	p.OnEndpointSlice(eps, false)
	p.Sync(ctx)
	got := askHealthCheck(port)
	want := "{\n\t\"service\": {\n\t\t\"namespace\": \"ns\",\n\t\t\"name\": \"web\"\n\t},\n\t\"localEndpoints\": 2,\n\t\"serviceProxyHealthy\": true\n}"
	if got.err != nil || got.code != http.StatusOK || got.weight != "2" || got.body != want {
		t.Fatalf("with 2 local endpoints: %+v\nwant 200, weight 2, body\n%s", got, want)
	}

	// No local endpoint left: 503, so the load balancer skips this node.
	p.OnEndpointSlice(endpointsOn("web", "n2"), false)
	p.Sync(ctx)
	if got := askHealthCheck(port); got.code != http.StatusServiceUnavailable || got.weight != "0" || !strings.Contains(got.body, `"localEndpoints": 0`) {
		t.Fatalf("without local endpoints: %+v", got)
	}

	// externalTrafficPolicy Cluster needs no health check: the port closes.
	cluster := lbLocal("web", 5, port)
	cluster.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	p.OnService(key("web"), cluster)
	p.Sync(ctx)
	if got := askHealthCheck(port); !errors.Is(got.err, syscall.ECONNREFUSED) {
		t.Fatalf("after the Service turned Cluster: %+v, want connection refused", got)
	}

	// A port someone else holds: an event, and a retry on the next sync.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busyPort := busy.Addr().(*net.TCPAddr).Port
	p.OnService(key("taken"), lbLocal("taken", 6, busyPort))
	p.OnEndpointSlice(endpointsOn("taken", "n1"), false)
	p.Sync(ctx)
	if len(ev.got) != 1 || !strings.HasPrefix(ev.got[0], "Warning FailedToStartServiceHealthcheck node n1 failed to start healthcheck \"ns/taken\" on port") {
		t.Fatalf("events %q", ev.got)
	}
	busy.Close()
	p.Sync(ctx)
	if got := askHealthCheck(busyPort); got.code != http.StatusOK {
		t.Fatalf("after the port was freed: %+v", got)
	}
	if ports := p.HealthCheckPorts(); len(ports) != 1 || ports[key("taken")] != uint16(busyPort) {
		t.Fatalf("open health checks %v", ports)
	}

	// The Service goes: its port closes.
	p.OnService(key("taken"), nil)
	p.Sync(ctx)
	if got := askHealthCheck(busyPort); got.err == nil {
		t.Fatalf("after the Service was deleted: %+v", got)
	}
}

func TestProxyHealthz(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	be := &memBackend{programs: map[types.NamespacedName]*ServiceView{}}
	metrics := NewMetrics(nil)
	p, err := New(Config{NodeName: "n1", Families: []Family{IPv4, IPv6}, Backend: be, FullSyncPeriod: -1, SyncPeriod: 30 * time.Second, Clock: clk, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.HealthHandler())
	defer srv.Close()
	get := func(path string) (int, ProxyHealth) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct, nosniff := resp.Header.Get("Content-Type"), resp.Header.Get("X-Content-Type-Options"); ct != "application/json" || nosniff != "nosniff" {
			t.Fatalf("%s: headers %q %q", path, ct, nosniff)
		}
		var h ProxyHealth
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, h
	}
	expect := func(step, path string, code int, healthy bool, eligible *bool) {
		t.Helper()
		c, h := get(path)
		if c != code || h.Healthy != healthy || (eligible == nil) != (h.NodeEligible == nil) || (eligible != nil && *eligible != *h.NodeEligible) {
			t.Fatalf("%s: %s answered %d %+v; want %d healthy %v eligible %v", step, path, c, h, code, healthy, eligible)
		}
		if len(h.Status) != 2 || h.Status[v1.IPv4Protocol].Healthy != healthy || !h.CurrentTime.Equal(clk.Now()) {
			t.Fatalf("%s: %s status %+v", step, path, h)
		}
	}
	yes, no := ptr.To(true), ptr.To(false)

	expect("before the informers listed", "/livez", 503, false, nil)
	p.SetSynced()
	p.Sync(context.Background())
	expect("synced, node unseen", "/livez", 200, true, nil)
	expect("synced, node unseen", "/healthz", 503, true, no)
	p.OnNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	p.Sync(context.Background())
	expect("node seen", "/healthz", 200, true, yes)

	// A change waits unprogrammed for twice the sync period: unhealthy.
	p.OnService(key("s"), svc("s", 5, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}))
	clk.Step(59 * time.Second)
	expect("change pending 59s", "/livez", 200, true, nil)
	clk.Step(time.Second)
	expect("change pending 60s", "/livez", 503, false, nil)
	expect("change pending 60s", "/healthz", 503, false, yes)
	if err := p.Healthy(); err == nil || !strings.Contains(err.Error(), "not programmed yet") {
		t.Fatalf("Healthy: %v", err)
	}
	p.Sync(context.Background())
	expect("programmed", "/livez", 200, true, nil)

	// The autoscaler is about to remove the node: load balancers drain it.
	p.OnNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: v1.NodeSpec{Taints: []v1.Taint{{Key: ToBeDeletedTaint, Effect: v1.TaintEffectNoSchedule}}}})
	expect("node tainted", "/healthz", 503, true, no)
	expect("node tainted", "/livez", 200, true, nil)
	p.OnNode(nil)
	expect("node deleted", "/healthz", 503, true, no)
	// Upstream's counters of the answers, by code.
	for _, c := range []struct {
		vec  *prometheus.CounterVec
		code string
		want float64
	}{{metrics.HealthzTotal, "200", 1}, {metrics.HealthzTotal, "503", 4}, {metrics.LivezTotal, "200", 4}, {metrics.LivezTotal, "503", 2}} {
		if got := testutil.ToFloat64(c.vec.WithLabelValues(c.code)); got != c.want {
			t.Errorf("answers with %s: %v, want %v", c.code, got, c.want)
		}
	}
}

package sim

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestProxiesReportProgrammingLatency(t *testing.T) {
	ts := newTestSim(t, 3, func(c *Config) { c.Proxies = 2; c.ProxyMinSyncPeriod = 10 * time.Millisecond })
	ts.run(t)
	ctx := context.Background()
	if _, err := ts.client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.client.DiscoveryV1().EndpointSlices("default").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default",
			Labels:      map[string]string{discoveryv1.LabelServiceName: "web"},
			Annotations: map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.5"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for ts.Stats().ProxyProgramming.Count() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("2 proxies observed %d programming latencies, want 2", ts.Stats().ProxyProgramming.Count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p99 := ts.Stats().ProxyProgramming.Quantile(0.99); p99 > 5*time.Second {
		t.Fatalf("programming latency p99 %s", p99)
	}
}

package apiserver

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testService(name string, typ corev1.ServiceType, nodePort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: map[string]string{"app": name},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, NodePort: nodePort}},
		},
	}
}

// smallRanges gives 6 ClusterIPs (10.0.0.1-6) and 3 NodePorts, so
// exhaustion and leaks show quickly.
var smallRanges = withConfig(func(c *Config) {
	c.ServiceClusterIPRange = "10.0.0.0/29"
	c.ServiceNodePortRange = "30000-30002"
})

func TestServiceAllocation(t *testing.T) {
	e := newEnv(t, smallRanges)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	prefix := netip.MustParsePrefix("10.0.0.0/29")

	ips := map[string]string{}
	for i := 0; i < 6; i++ {
		out, err := svcs.Create(ctx, testService(fmt.Sprintf("s%d", i), corev1.ServiceTypeClusterIP, 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create s%d: %v", i, err)
		}
		ip := out.Spec.ClusterIP
		addr, err := netip.ParseAddr(ip)
		if err != nil || !prefix.Contains(addr) || addr == prefix.Addr() || ip == "10.0.0.7" {
			t.Fatalf("s%d got ClusterIP %q outside the usable range", i, ip)
		}
		if other, dup := ips[ip]; dup {
			t.Fatalf("s%d and %s share ClusterIP %s", i, other, ip)
		}
		ips[ip] = out.Name
		if len(out.Spec.ClusterIPs) != 1 || out.Spec.ClusterIPs[0] != ip {
			t.Fatalf("clusterIPs %v do not match clusterIP %s", out.Spec.ClusterIPs, ip)
		}
	}
	if _, err := svcs.Create(ctx, testService("full", corev1.ServiceTypeClusterIP, 0), metav1.CreateOptions{}); err == nil {
		t.Fatal("allocated a 7th address from a range of 6")
	}
	// A headless service and an ExternalName need no address.
	headless := testService("headless", corev1.ServiceTypeClusterIP, 0)
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	if _, err := svcs.Create(ctx, headless, metav1.CreateOptions{}); err != nil {
		t.Fatalf("headless: %v", err)
	}
	// Deleting frees the address for an explicit request.
	s0, _ := svcs.Get(ctx, "s0", metav1.GetOptions{})
	freed := s0.Spec.ClusterIP
	explicit := testService("explicit", corev1.ServiceTypeClusterIP, 0)
	explicit.Spec.ClusterIP = freed
	if _, err := svcs.Create(ctx, explicit, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "already allocated") {
		t.Fatalf("explicit IP in use: want 422 already allocated, got %v", err)
	}
	if err := svcs.Delete(ctx, "s0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, explicit, metav1.CreateOptions{}); err != nil {
		t.Fatalf("explicit IP after its release: %v", err)
	}
	outside := testService("outside", corev1.ServiceTypeClusterIP, 0)
	outside.Spec.ClusterIP = "192.168.0.1"
	if _, err := svcs.Create(ctx, outside, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("explicit IP outside the range: want 422, got %v", err)
	}

	// The allocations survive a restart of the server over the same store.
	e.stopServer()
	e.startServer()
	svcs = e.cs.CoreV1().Services("default")
	if _, err := svcs.Create(ctx, testService("after-restart", corev1.ServiceTypeClusterIP, 0), metav1.CreateOptions{}); err == nil {
		t.Fatal("after a restart the allocator handed out an address that is in use")
	}
	dup := testService("dup", corev1.ServiceTypeClusterIP, 0)
	dup.Spec.ClusterIP = freed
	if _, err := svcs.Create(ctx, dup, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("after a restart an explicit IP in use was accepted: %v", err)
	}
}

func TestServiceNodePorts(t *testing.T) {
	e := newEnv(t, smallRanges)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	a, err := svcs.Create(ctx, testService("a", corev1.ServiceTypeNodePort, 30000), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, testService("b", corev1.ServiceTypeNodePort, 30000), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("duplicate nodePort: want 422, got %v", err)
	}
	if _, err := svcs.Create(ctx, testService("c", corev1.ServiceTypeNodePort, 40000), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("nodePort out of range: want 422, got %v", err)
	}
	b, err := svcs.Create(ctx, testService("b", corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := b.Spec.Ports[0].NodePort; p < 30001 || p > 30002 {
		t.Fatalf("allocated nodePort %d, want a free one in 30001-30002", p)
	}

	// Dry-run updates must neither free nor take ports.
	toClusterIP := a.DeepCopy()
	toClusterIP.Spec.Type = corev1.ServiceTypeClusterIP
	toClusterIP.Spec.Ports[0].NodePort = 0
	toClusterIP.Spec.ExternalTrafficPolicy = ""
	if _, err := svcs.Update(ctx, toClusterIP, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, testService("steal", corev1.ServiceTypeNodePort, 30000), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a dry-run update freed a nodePort still in use: %v", err)
	}
	plain, err := svcs.Create(ctx, testService("plain", corev1.ServiceTypeClusterIP, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		toNodePort := plain.DeepCopy()
		toNodePort.Spec.Type = corev1.ServiceTypeNodePort
		if _, err := svcs.Update(ctx, toNodePort, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run update %d: %v", i, err)
		}
	}
	// A failed (stale) update must not keep what it took either.
	stale := plain.DeepCopy()
	plain.Labels = map[string]string{"v": "2"}
	if _, err := svcs.Update(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Spec.Type = corev1.ServiceTypeNodePort
	if _, err := svcs.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want 409, got %v", err)
	}
	c, err := svcs.Create(ctx, testService("c", corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the last free nodePort leaked: %v", err)
	}

	// A real type change frees the ports only once written; deleting frees.
	if _, err := svcs.Update(ctx, toClusterIP, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, testService("reuse", corev1.ServiceTypeNodePort, 30000), metav1.CreateOptions{}); err != nil {
		t.Fatalf("nodePort freed by a type change: %v", err)
	}
	if err := svcs.Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, testService("reuse2", corev1.ServiceTypeNodePort, c.Spec.Ports[0].NodePort), metav1.CreateOptions{}); err != nil {
		t.Fatalf("nodePort freed by delete: %v", err)
	}
	// Merge-patching in a type change allocates a port.
	if _, err := svcs.Patch(ctx, "plain", types.MergePatchType, []byte(`{"spec":{"type":"NodePort"}}`), metav1.PatchOptions{}); err == nil {
		t.Fatal("patched to NodePort with every port taken")
	}
}

func TestServiceDryRunCreateTakesNothing(t *testing.T) {
	e := newEnv(t, smallRanges)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	for i := 0; i < 5; i++ {
		if _, err := svcs.Create(ctx, testService("dry", corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("dry-run create %d: %v", i, err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := svcs.Create(ctx, testService(fmt.Sprintf("s%d", i), corev1.ServiceTypeNodePort, 0), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d after dry runs: %v", i, err)
		}
	}
}

// TestServiceHealthCheckNodePort: a LoadBalancer Service with
// externalTrafficPolicy Local gets a health check node port of its own
// through the API; a merge patch to Cluster releases it.
func TestServiceHealthCheckNodePort(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	s := testService("lb", corev1.ServiceTypeLoadBalancer, 0)
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	lb, err := svcs.Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc := lb.Spec.HealthCheckNodePort
	if hc < 30000 || hc > 32767 || hc == lb.Spec.Ports[0].NodePort {
		t.Fatalf("healthCheckNodePort %d (node port %d), want another port of 30000-32767", hc, lb.Spec.Ports[0].NodePort)
	}
	taker := testService("taker", corev1.ServiceTypeNodePort, hc)
	if _, err := svcs.Create(ctx, taker, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a node port equal to a health check port: %v, want 422", err)
	}
	cluster, err := svcs.Patch(ctx, "lb", types.MergePatchType, []byte(`{"spec":{"externalTrafficPolicy":"Cluster"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cluster.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("healthCheckNodePort %d after the switch to Cluster", cluster.Spec.HealthCheckNodePort)
	}
	if _, err := svcs.Create(ctx, taker, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the released health check port: %v", err)
	}
}

package apiserver

import (
	"context"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubernetesService: the server publishes itself as default/kubernetes
// with the range's first address, and repoints the endpoints when it comes
// back on another port, keeping the Service (and its ClusterIP) as is.
func TestKubernetesService(t *testing.T) {
	port := int32(6443)
	e := newEnv(t, withConfig(func(c *Config) {
		c.PublicAddress, c.PublicPort = netip.MustParseAddr("192.0.2.10"), port
	}))
	ctx := context.Background()
	check := func(wantPort int32) {
		t.Helper()
		svc, err := e.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 {
			t.Errorf("service = %+v, want 10.96.0.1:443", svc.Spec)
		}
		ep, err := e.cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ep.Subsets) != 1 || ep.Subsets[0].Addresses[0].IP != "192.0.2.10" || ep.Subsets[0].Ports[0].Port != wantPort {
			t.Errorf("endpoints = %+v, want 192.0.2.10:%d", ep.Subsets, wantPort)
		}
		slice, err := e.cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if slice.Labels["kubernetes.io/service-name"] != "kubernetes" || *slice.Ports[0].Port != wantPort || slice.Endpoints[0].Addresses[0] != "192.0.2.10" {
			t.Errorf("endpointslice = %+v, want 192.0.2.10:%d", slice, wantPort)
		}
	}
	check(6443)
	ep, _ := e.cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})

	// Same address and port: nothing is rewritten.
	e.stopServer()
	e.startServer()
	check(6443)
	again, _ := e.cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if again.ResourceVersion != ep.ResourceVersion {
		t.Errorf("unchanged endpoints rewritten: rv %s -> %s", ep.ResourceVersion, again.ResourceVersion)
	}

	port = 7443
	e.stopServer()
	e.startServer()
	check(7443)
}

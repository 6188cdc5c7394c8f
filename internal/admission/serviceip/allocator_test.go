package serviceip

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func svc(name string, typ corev1.ServiceType, clusterIP string, nodePorts ...int32) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.ServiceSpec{Type: typ, ClusterIP: clusterIP}}
	if len(nodePorts) == 0 {
		nodePorts = []int32{0}
	}
	for _, p := range nodePorts {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 80, NodePort: p})
	}
	return s
}

// small is 6 addresses (10.0.0.1-6) and 3 node ports (30000-30002).
func small(t *testing.T) *Allocator {
	t.Helper()
	a, err := New("10.0.0.0/29", "30000-30002")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func create(t *testing.T, a *Allocator, s *corev1.Service) (admission.Finish, error) {
	t.Helper()
	return a.Allocate(context.Background(), &admission.Attributes{Operation: admission.Create, Resource: servicesResource, Object: s})
}

func update(t *testing.T, a *Allocator, s, old *corev1.Service) (admission.Finish, error) {
	t.Helper()
	return a.Allocate(context.Background(), &admission.Attributes{Operation: admission.Update, Resource: servicesResource, Object: s, OldObject: old})
}

func remove(t *testing.T, a *Allocator, old *corev1.Service) admission.Finish {
	t.Helper()
	f, err := a.Allocate(context.Background(), &admission.Attributes{Operation: admission.Delete, Resource: servicesResource, OldObject: old})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// heldCounts is how many addresses and ports the allocator has marked.
func (a *Allocator) heldCounts() (ips, ports int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.mu.ips), len(a.mu.ports)
}

func TestNew(t *testing.T) {
	tests := []struct {
		cidr, ports string
		wantErr     string
		wantFirst   string
	}{
		{wantFirst: "10.96.0.1"},
		{cidr: "10.0.0.0/29", ports: "30000-30002", wantFirst: "10.0.0.1"},
		{cidr: "10.0.0.5/29", wantFirst: "10.0.0.1"},
		{cidr: "fd00::/112", wantErr: "want an IPv4 CIDR"},
		{cidr: "10.0.0.0", wantErr: "want an IPv4 CIDR"},
		{cidr: "10.0.0.0/31", wantErr: "too small"},
		{ports: "30000", wantErr: "want low-high"},
		{ports: "3-2", wantErr: "want low-high"},
		{ports: "0-10", wantErr: "want low-high"},
		{ports: "1-65536", wantErr: "want low-high"},
	}
	for _, tt := range tests {
		t.Run(tt.cidr+" "+tt.ports, func(t *testing.T) {
			a, err := New(tt.cidr, tt.ports)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := a.FirstAddress().String(); got != tt.wantFirst {
				t.Errorf("FirstAddress = %s, want %s", got, tt.wantFirst)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	tests := []struct {
		name          string
		taken         *corev1.Service // allocated and written first
		svc           *corev1.Service
		wantInvalid   string // 422 containing this
		wantInternal  bool   // 500: a range is full
		wantClusterIP string // "" any in range; "None" headless; "-" none
		wantNodePort  int32  // -1: any in range
	}{
		{name: "clusterIP from the range", svc: svc("a", corev1.ServiceTypeClusterIP, ""), wantNodePort: 0},
		{name: "explicit clusterIP", svc: svc("a", corev1.ServiceTypeClusterIP, "10.0.0.3"), wantClusterIP: "10.0.0.3"},
		{name: "explicit clusterIP outside the range", svc: svc("a", corev1.ServiceTypeClusterIP, "192.168.0.1"), wantInvalid: "not in the valid range"},
		{name: "explicit clusterIP taken", taken: svc("t", corev1.ServiceTypeClusterIP, "10.0.0.3"), svc: svc("a", corev1.ServiceTypeClusterIP, "10.0.0.3"), wantInvalid: "provided IP is already allocated"},
		{name: "headless", svc: svc("a", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone), wantClusterIP: corev1.ClusterIPNone},
		{name: "external name", svc: svc("a", corev1.ServiceTypeExternalName, ""), wantClusterIP: "-"},
		{name: "node port from the range", svc: svc("a", corev1.ServiceTypeNodePort, ""), wantNodePort: -1},
		{name: "load balancer gets node ports", svc: svc("a", corev1.ServiceTypeLoadBalancer, ""), wantNodePort: -1},
		{name: "explicit node port", svc: svc("a", corev1.ServiceTypeNodePort, "", 30002), wantNodePort: 30002},
		{name: "explicit node port out of range", svc: svc("a", corev1.ServiceTypeNodePort, "", 40000), wantInvalid: "The range of valid ports is 30000-30002"},
		{name: "explicit node port taken", taken: svc("t", corev1.ServiceTypeNodePort, "", 30001), svc: svc("a", corev1.ServiceTypeNodePort, "", 30001), wantInvalid: "provided port is already allocated"},
		{name: "node ports full", taken: svc("t", corev1.ServiceTypeNodePort, "", 0, 0, 0), svc: svc("a", corev1.ServiceTypeNodePort, ""), wantInternal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := small(t)
			if tt.taken != nil {
				f, err := create(t, a, tt.taken)
				if err != nil {
					t.Fatal(err)
				}
				f(true)
			}
			ips0, ports0 := a.heldCounts()
			f, err := create(t, a, tt.svc)
			switch {
			case tt.wantInvalid != "":
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tt.wantInvalid) {
					t.Fatalf("err = %v, want 422 %q", err, tt.wantInvalid)
				}
			case tt.wantInternal:
				if !apierrors.IsInternalError(err) {
					t.Fatalf("err = %v, want 500", err)
				}
			case err != nil:
				t.Fatal(err)
			}
			if err != nil {
				if ips, ports := a.heldCounts(); ips != ips0 || ports != ports0 {
					t.Errorf("a failed allocation kept %d addresses and %d ports", ips-ips0, ports-ports0)
				}
				return
			}
			s := tt.svc
			switch tt.wantClusterIP {
			case "-":
				if s.Spec.ClusterIP != "" || len(s.Spec.ClusterIPs) != 0 {
					t.Errorf("clusterIP %q %v, want none", s.Spec.ClusterIP, s.Spec.ClusterIPs)
				}
			case "":
				if addr, err := netip.ParseAddr(s.Spec.ClusterIP); err != nil || !a.prefix.Contains(addr) || addr == a.prefix.Addr() || s.Spec.ClusterIP == "10.0.0.7" {
					t.Errorf("clusterIP %q outside the usable range", s.Spec.ClusterIP)
				}
			default:
				if s.Spec.ClusterIP != tt.wantClusterIP {
					t.Errorf("clusterIP %q, want %q", s.Spec.ClusterIP, tt.wantClusterIP)
				}
			}
			if tt.wantClusterIP != "-" && (len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != s.Spec.ClusterIP) {
				t.Errorf("clusterIPs %v do not match clusterIP %s", s.Spec.ClusterIPs, s.Spec.ClusterIP)
			}
			switch p := s.Spec.Ports[0].NodePort; {
			case tt.wantNodePort == -1 && (p < 30000 || p > 30002):
				t.Errorf("nodePort %d outside 30000-30002", p)
			case tt.wantNodePort != -1 && p != tt.wantNodePort:
				t.Errorf("nodePort %d, want %d", p, tt.wantNodePort)
			}
			// Not written: everything it took goes back.
			f(false)
			if ips, ports := a.heldCounts(); ips != ips0 || ports != ports0 {
				t.Errorf("finish(false) kept %d addresses and %d ports", ips-ips0, ports-ports0)
			}
		})
	}
}

// TestUpdateFinish: what an update frees goes only once the update is
// written; what it newly took goes back if it is not.
func TestUpdateFinish(t *testing.T) {
	nodePort := svc("np", corev1.ServiceTypeNodePort, "", 30000)
	tests := []struct {
		name    string
		change  func(s *corev1.Service)
		written bool
		// port30000Free: after finish, whether 30000 can be taken again;
		// newPorts: the ports held besides.
		port30000Free bool
		newPorts      int
	}{
		{name: "to ClusterIP, written", change: toClusterIP, written: true, port30000Free: true},
		{name: "to ClusterIP, not written", change: toClusterIP, written: false, port30000Free: false},
		{name: "add a port, written", change: addPort, written: true, port30000Free: false, newPorts: 1},
		{name: "add a port, not written", change: addPort, written: false, port30000Free: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := small(t)
			old := nodePort.DeepCopy()
			f, err := create(t, a, old)
			if err != nil {
				t.Fatal(err)
			}
			f(true)
			s := old.DeepCopy()
			tt.change(s)
			f, err = update(t, a, s, old)
			if err != nil {
				t.Fatal(err)
			}
			// Before finish, the old port stays taken either way.
			if _, err := create(t, a, svc("steal", corev1.ServiceTypeNodePort, "", 30000)); !apierrors.IsInvalid(err) {
				t.Fatalf("an unfinished update freed its old port: %v", err)
			}
			f(tt.written)
			_, ports := a.heldCounts()
			wantPorts := tt.newPorts
			if !tt.port30000Free {
				wantPorts++
			}
			if ports != wantPorts {
				t.Errorf("%d ports held, want %d", ports, wantPorts)
			}
			_, err = create(t, a, svc("steal", corev1.ServiceTypeNodePort, "", 30000))
			if free := err == nil; free != tt.port30000Free {
				t.Errorf("30000 free = %v, want %v (%v)", free, tt.port30000Free, err)
			}
		})
	}
}

func toClusterIP(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeClusterIP
	s.Spec.Ports[0].NodePort = 0
}

func addPort(s *corev1.Service) {
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: 81})
}

func TestDeleteReleasesOnceWritten(t *testing.T) {
	a := small(t)
	s := svc("a", corev1.ServiceTypeNodePort, "10.0.0.2", 30001)
	f, err := create(t, a, s)
	if err != nil {
		t.Fatal(err)
	}
	f(true)
	remove(t, a, s)(false)
	if ips, ports := a.heldCounts(); ips != 1 || ports != 1 {
		t.Fatalf("a delete that was not written released: %d addresses, %d ports held", ips, ports)
	}
	remove(t, a, s)(true)
	if ips, ports := a.heldCounts(); ips != 0 || ports != 0 {
		t.Fatalf("a written delete kept %d addresses and %d ports", ips, ports)
	}
}

func TestLoad(t *testing.T) {
	a := small(t)
	stored := svc("a", corev1.ServiceTypeNodePort, "10.0.0.2", 30001)
	stored.Spec.ClusterIPs = []string{"10.0.0.2"}
	a.Load([]*corev1.Service{stored})
	if _, err := create(t, a, svc("b", corev1.ServiceTypeClusterIP, "10.0.0.2")); !apierrors.IsInvalid(err) {
		t.Errorf("a loaded address was handed out again: %v", err)
	}
	if _, err := create(t, a, svc("b", corev1.ServiceTypeNodePort, "", 30001)); !apierrors.IsInvalid(err) {
		t.Errorf("a loaded node port was handed out again: %v", err)
	}
}

func TestOtherResourcesAndSubresources(t *testing.T) {
	a := small(t)
	for _, attrs := range []*admission.Attributes{
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Object: &corev1.Pod{}},
		{Operation: admission.Update, Resource: servicesResource, Subresource: "status", Object: svc("a", corev1.ServiceTypeNodePort, ""), OldObject: svc("a", corev1.ServiceTypeNodePort, "")},
	} {
		f, err := a.Allocate(context.Background(), attrs)
		if err != nil {
			t.Fatal(err)
		}
		f(true)
	}
	if ips, ports := a.heldCounts(); ips != 0 || ports != 0 {
		t.Fatalf("allocated %d addresses and %d ports for writes that are not its business", ips, ports)
	}
}

// TestHealthCheckNodePort: a LoadBalancer with externalTrafficPolicy
// Local gets a health check node port from the node port range beside
// its node ports; one asked for is taken if free; it is released when
// the Service stops needing it and when it is deleted.
func TestHealthCheckNodePort(t *testing.T) {
	a := small(t)
	lb := svc("lb", corev1.ServiceTypeLoadBalancer, "")
	lb.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	finish, err := create(t, a, lb)
	if err != nil {
		t.Fatal(err)
	}
	finish(true)
	hc := lb.Spec.HealthCheckNodePort
	if hc < 30000 || hc > 30002 || hc == lb.Spec.Ports[0].NodePort {
		t.Fatalf("health check node port %d, node port %d: want a second port of 30000-30002", hc, lb.Spec.Ports[0].NodePort)
	}
	if _, ports := a.heldCounts(); ports != 2 {
		t.Fatalf("%d ports held, want 2", ports)
	}

	// Another Service asking for the same health check port.
	other := svc("other", corev1.ServiceTypeLoadBalancer, "")
	other.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	other.Spec.HealthCheckNodePort = hc
	if _, err := create(t, a, other); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.healthCheckNodePort") {
		t.Fatalf("a health check port already allocated: %v, want 422 on spec.healthCheckNodePort", err)
	}
	if _, ports := a.heldCounts(); ports != 2 {
		t.Fatalf("%d ports held after a refused create, want 2", ports)
	}

	// Cluster traffic policy: no health check port any more; it is freed
	// once the update is written.
	cluster := lb.DeepCopy()
	cluster.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	finish, err = update(t, a, cluster, lb)
	if err != nil {
		t.Fatal(err)
	}
	finish(true)
	if cluster.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("health check port %d kept without Local traffic policy", cluster.Spec.HealthCheckNodePort)
	}
	if _, ports := a.heldCounts(); ports != 1 {
		t.Fatalf("%d ports held after the update, want 1", ports)
	}
	remove(t, a, cluster)(true)
	if _, ports := a.heldCounts(); ports != 0 {
		t.Fatalf("%d ports held after the delete, want 0", ports)
	}
}

package nftables

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// populate adds n Services of 10 endpoints each.
func populate(h *harness, n int) {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("s%d", i)
		h.svc(service("default", name, fmt.Sprintf("10.96.%d.%d", i/250, i%250+1), []v1.ServicePort{tcp("http", 80, 0)}))
		h.eps(endpointsOf(name, i, 0))
	}
}

// endpointsOf returns Service i's slice with 10 endpoints, the first one
// replaced by generation gen.
func endpointsOf(name string, i, gen int) *discovery.EndpointSlice {
	var eps []ep
	for j := 0; j < 10; j++ {
		eps = append(eps, readyEP(fmt.Sprintf("10.%d.%d.%d", 128+j+10*(i/65536), (i/256)%256, i%256), "node-b"))
	}
	if gen > 0 {
		eps[3] = readyEP(fmt.Sprintf("10.200.%d.%d", gen/256, gen%256), "node-b")
	}
	return slice("default", name, name+"-1", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, eps...)
}

type recorder struct {
	*Backend
	last proxy.SyncResult
}

func (r *recorder) Sync(ctx context.Context, c map[types.NamespacedName]*proxy.ServiceView) (proxy.SyncResult, error) {
	res, err := r.Backend.Sync(ctx, c)
	r.last = res
	return res, err
}

// newRecordingHarness is a synced IPv4 proxy over a dry-run backend that
// keeps each sync's result.
func newRecordingHarness(t *testing.T) (*harness, *recorder) {
	t.Helper()
	rec := &recorder{Backend: NewDryRun(Config{Families: []proxy.Family{proxy.IPv4}})}
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: rec, FullSyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	return &harness{p: p, b: rec.Backend}, rec
}

func TestOneEndpointChangeTouchesOneElement(t *testing.T) {
	h, rec := newRecordingHarness(t)
	p := h.p
	populate(h, 100)
	p.Sync(context.Background())

	// An endpoint replaced in place: one slot's element rewritten (delete +
	// add of the same key) plus the hairpin set's old and new address.
	h.eps(endpointsOf("s42", 42, 1))
	p.Sync(context.Background())
	if want := (proxy.SyncResult{Elements: 4}); rec.last != want {
		t.Fatalf("replacing one endpoint wrote %+v, want %+v", rec.last, want)
	}

	// An endpoint removed: the port's chain now jumps to the shared chain
	// for 9 endpoints (one rule), created the first time (a chain and its
	// rule), and the last slot moves into the hole (at most 3 elements).
	s := endpointsOf("s42", 42, 1)
	s.Endpoints = s.Endpoints[:9]
	h.eps(s)
	p.Sync(context.Background())
	if want := (proxy.SyncResult{Elements: rec.last.Elements, Chains: 3, Rules: 2}); rec.last != want || rec.last.Elements > 3 {
		t.Fatalf("removing the first port's 10th endpoint wrote %+v, want %+v with at most 3 elements", rec.last, want)
	}
	s43 := endpointsOf("s43", 43, 0)
	s43.Endpoints = s43.Endpoints[:9]
	h.eps(s43)
	p.Sync(context.Background())
	if want := (proxy.SyncResult{Elements: rec.last.Elements, Chains: 1, Rules: 1}); rec.last != want || rec.last.Elements > 3 {
		t.Fatalf("removing another port's 10th endpoint wrote %+v, want %+v with at most 3 elements", rec.last, want)
	}

	// Nothing changed: nothing written.
	h.eps(s)
	p.Sync(context.Background())
	if rec.last != (proxy.SyncResult{}) {
		t.Fatalf("an unchanged slice wrote %+v", rec.last)
	}
}

func TestStaleUDPFlowsOnlyForRemovedEndpoints(t *testing.T) {
	h, rec := newRecordingHarness(t)
	p := h.p
	h.svc(service("ns", "dns", "10.96.0.53", []v1.ServicePort{{Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}},
		func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }))
	eps := func(ips ...string) {
		var list []ep
		for _, ip := range ips {
			list = append(list, readyEP(ip, "node-b"))
		}
		h.eps(slice("ns", "dns", "dns-1", discovery.AddressTypeIPv4, "dns", 53, v1.ProtocolUDP, list...))
		p.Sync(context.Background())
	}
	eps("10.244.0.1", "10.244.0.2", "10.244.0.3")
	// 10.244.0.1 goes; 10.244.0.3 moves into its slot but stays: one stale
	// endpoint, at two entry points (cluster IP and node port).
	eps("10.244.0.2", "10.244.0.3")
	if rec.last.StaleFlows != 2 {
		t.Fatalf("removing one UDP endpoint: %d stale flow filters, want 2 (cluster IP and node port)", rec.last.StaleFlows)
	}
	eps("10.244.0.2", "10.244.0.3", "10.244.0.4")
	if rec.last.StaleFlows != 0 {
		t.Fatalf("adding an endpoint: %d stale flow filters, want 0", rec.last.StaleFlows)
	}
}

// Each port of a Service keeps its own endpoint order: replacing one
// endpoint of a two-port Service rewrites one slot per port.
func TestOneEndpointChangeInATwoPortService(t *testing.T) {
	h, rec := newRecordingHarness(t)
	p := h.p
	h.svc(service("default", "web", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 0), tcp("https", 443, 0)}))
	twoPorts := func(ips ...string) *discovery.EndpointSlice {
		var eps []ep
		for _, ip := range ips {
			eps = append(eps, readyEP(ip, "node-b"))
		}
		s := slice("default", "web", "web-1", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, eps...)
		s.Ports = append(s.Ports, discovery.EndpointPort{Name: ptr.To("https"), Port: ptr.To[int32](8443), Protocol: ptr.To(v1.ProtocolTCP)})
		return s
	}
	h.eps(twoPorts("10.244.0.2", "10.244.0.3", "10.244.0.4", "10.244.0.5"))
	p.Sync(context.Background())
	// 10.244.0.3 is replaced by 10.244.0.1, which sorts first: it takes the
	// freed slot at each port (delete + add each), and the hairpin set
	// loses one address and gains one.
	h.eps(twoPorts("10.244.0.1", "10.244.0.2", "10.244.0.4", "10.244.0.5"))
	p.Sync(context.Background())
	if want := (proxy.SyncResult{Elements: 6}); rec.last != want {
		t.Fatalf("replacing one endpoint of a two-port Service wrote %+v, want %+v", rec.last, want)
	}
}

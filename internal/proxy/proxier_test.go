package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// memBackend records what it is asked to program; it fails while fail is
// set. It is the model's consumer in these tests, not a stand-in for the
// nftables backend (which has its own tests).
type memBackend struct {
	fail     bool
	programs map[types.NamespacedName]*ServiceView
	calls    int
}

func (m *memBackend) Sync(_ context.Context, c map[types.NamespacedName]*ServiceView) (SyncResult, error) {
	m.calls++
	if m.fail {
		return SyncResult{}, errors.New("kernel said no")
	}
	for k, v := range c {
		if v == nil {
			delete(m.programs, k)
		} else {
			m.programs[k] = v
		}
	}
	return SyncResult{Elements: len(c)}, nil
}
func (m *memBackend) Resync(context.Context) (SyncResult, error) { return SyncResult{}, nil }
func (m *memBackend) Supports(p v1.Protocol) bool                { return p != v1.ProtocolSCTP }

type events struct {
	mu  sync.Mutex
	got []string
}

func (e *events) Eventf(_ runtime.Object, typ, reason, f string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, typ+" "+reason+" "+fmt.Sprintf(f, args...))
}

func svc(name string, created int64, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(time.Unix(created, 0))},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIP: "10.96.0." + fmt.Sprint(created), Ports: ports},
	}
}

func key(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

func newTestProxier(t *testing.T) (*Proxier, *memBackend, *events) {
	be := &memBackend{programs: map[types.NamespacedName]*ServiceView{}}
	ev := &events{}
	p, err := New(Config{NodeName: "n1", Families: []Family{IPv4}, Backend: be, Recorder: ev, FullSyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	return p, be, ev
}

func TestNodePortConflictOlderServiceWins(t *testing.T) {
	p, be, ev := newTestProxier(t)
	ctx := context.Background()
	p.OnService(key("new"), svc("new", 20, v1.ServicePort{Name: "a", Port: 80, NodePort: 30000, Protocol: v1.ProtocolTCP}))
	p.Sync(ctx)
	if n := len(be.programs[key("new")].Ports); n != 1 {
		t.Fatalf("alone, the newer service programs %d ports", n)
	}
	// An older Service claiming the same NodePort takes it over.
	p.OnService(key("old"), svc("old", 10, v1.ServicePort{Name: "a", Port: 80, NodePort: 30000, Protocol: v1.ProtocolTCP}))
	p.Sync(ctx)
	if len(be.programs[key("old")].Ports) != 1 || len(be.programs[key("new")].Ports) != 0 {
		t.Fatalf("conflict: old %d ports, new %d ports; want 1 and 0", len(be.programs[key("old")].Ports), len(be.programs[key("new")].Ports))
	}
	if len(ev.got) != 1 || ev.got[0] != "Warning ServicePortNotProgrammed ns/new/tcp/a: nodePort TCP/30000 is already used by service ns/old" {
		t.Fatalf("events %q", ev.got)
	}
	// The older one goes: the newer gets its port back.
	p.OnService(key("old"), nil)
	p.Sync(ctx)
	if len(be.programs[key("new")].Ports) != 1 {
		t.Fatalf("after the owner left, the newer service programs %d ports", len(be.programs[key("new")].Ports))
	}
	p.Sync(ctx)
	if len(ev.got) != 1 {
		t.Fatalf("events repeated: %q", ev.got)
	}
}

func TestUnsupportedProtocolSkipped(t *testing.T) {
	p, be, ev := newTestProxier(t)
	p.OnService(key("s"), svc("s", 5, v1.ServicePort{Name: "tcp", Port: 80, Protocol: v1.ProtocolTCP}, v1.ServicePort{Name: "sctp", Port: 80, Protocol: v1.ProtocolSCTP}))
	p.Sync(context.Background())
	v := be.programs[key("s")]
	if len(v.Ports) != 1 || v.Ports[0].Name.Protocol != v1.ProtocolTCP || len(ev.got) != 1 {
		t.Fatalf("ports %+v events %q", v.Ports, ev.got)
	}
}

func TestBackendFailureIsRetriedWithTheSameChanges(t *testing.T) {
	p, be, _ := newTestProxier(t)
	ctx := context.Background()
	be.fail = true
	p.OnService(key("s"), svc("s", 5, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}))
	p.OnEndpointSlice(&discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "s-1", Labels: map[string]string{discovery.LabelServiceName: "s"}},
		AddressType: discovery.AddressTypeIPv4,
		Ports:       []discovery.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(v1.ProtocolTCP)}},
		Endpoints:   []discovery.Endpoint{{Addresses: []string{"10.244.0.1"}}},
	}, false)
	p.Sync(ctx)
	if len(be.programs) != 0 {
		t.Fatal("a failed sync was recorded as programmed")
	}
	if err := p.Healthy(); err != nil {
		t.Fatalf("one failure must not make the proxy unhealthy yet: %v", err)
	}
	be.fail = false
	p.Sync(ctx)
	v := be.programs[key("s")]
	if v == nil || len(v.Ports) != 1 || len(v.Ports[0].Cluster) != 1 {
		t.Fatalf("the retry did not program the service: %+v", v)
	}
}

func TestCategorize(t *testing.T) {
	ready := Endpoint{Ready: true, Serving: true}
	readyLocal := Endpoint{Ready: true, Serving: true, Local: true}
	termServing := Endpoint{Serving: true, Terminating: true}
	termServingLocal := Endpoint{Serving: true, Terminating: true, Local: true}
	for _, tc := range []struct {
		name           string
		sp             ServicePort
		eps            []Endpoint
		cluster, local int
		hasAny         bool
	}{
		{"cluster uses ready only", ServicePort{}, []Endpoint{ready, termServing}, 1, 0, true},
		{"terminating fallback", ServicePort{}, []Endpoint{termServing, {}}, 1, 0, true},
		{"nothing serving", ServicePort{}, []Endpoint{{}}, 0, 0, false},
		{"internal local", ServicePort{InternalPolicyLocal: true}, []Endpoint{ready, readyLocal}, 0, 1, true},
		{"internal local, none local", ServicePort{InternalPolicyLocal: true}, []Endpoint{ready}, 0, 0, true},
		{"external local falls back to local terminating", ServicePort{NodePort: 30000, ExternalPolicyLocal: true}, []Endpoint{ready, termServingLocal}, 1, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l, any := categorize(tc.eps, &tc.sp, "n1", "")
			if len(c) != tc.cluster || len(l) != tc.local || any != tc.hasAny {
				t.Fatalf("cluster %d local %d hasAny %v; want %d %d %v", len(c), len(l), any, tc.cluster, tc.local, tc.hasAny)
			}
		})
	}
}

// concurrencyBackend records how many of its Syncs ran at once.
type concurrencyBackend struct {
	memBackend
	mu              sync.Mutex
	running, maxRun int
	synced          chan struct{}
}

func (c *concurrencyBackend) Sync(ctx context.Context, ch map[types.NamespacedName]*ServiceView) (SyncResult, error) {
	c.mu.Lock()
	c.running++
	c.maxRun = max(c.maxRun, c.running)
	c.mu.Unlock()
	time.Sleep(5 * time.Millisecond) // long enough for the others to try
	c.mu.Lock()
	c.running--
	c.mu.Unlock()
	c.synced <- struct{}{}
	return SyncResult{Elements: len(ch)}, nil
}

func TestSyncTurnsSerializeProxiers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const proxiers = 4
	be := &concurrencyBackend{synced: make(chan struct{}, proxiers)}
	turns := semaphore.NewWeighted(1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range proxiers {
		p, err := New(Config{NodeName: fmt.Sprintf("n%d", i), Families: []Family{IPv4}, Backend: be, FullSyncPeriod: -1, SyncTurns: turns})
		if err != nil {
			t.Fatal(err)
		}
		p.OnService(key("a"), svc("a", 1, v1.ServicePort{Name: "http", Port: 80, Protocol: v1.ProtocolTCP}))
		p.SetSynced()
		wg.Go(func() { p.Run(ctx) })
	}
	for range proxiers {
		select {
		case <-be.synced:
		case <-time.After(10 * time.Second):
			t.Fatal("not every proxier synced")
		}
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if be.maxRun != 1 {
		t.Fatalf("%d syncs ran at once with one turn, want 1", be.maxRun)
	}
}

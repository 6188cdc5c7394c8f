package nftables

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// benchSizes are the Service counts; MYRIAD_PROXY_BENCH_SIZES=1000,5000,20000,30000
// runs the full set (the larger ones take minutes to populate).
func benchSizes() []int {
	s := os.Getenv("MYRIAD_PROXY_BENCH_SIZES")
	if s == "" {
		return []int{1000, 5000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// BenchmarkKernel programs N Services of 10 endpoints into a throwaway
// network namespace, then times one new Service, one endpoint change
// (incremental: one transaction of the difference), and a full rewrite of
// the same rule set in one transaction (the iptables-restore equivalent).
func BenchmarkKernel(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	for _, n := range benchSizes() {
		ns := fmt.Sprintf("mpbench%d", os.Getpid())
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			b.Skipf("netns: %v %s", err, out)
		}
		fd, err := os.Open("/var/run/netns/" + ns)
		if err != nil {
			b.Fatal(err)
		}
		be, err := New(Config{Families: []proxy.Family{proxy.IPv4}, NetNSFd: int(fd.Fd())})
		if err != nil {
			b.Fatal(err)
		}
		p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: be, FullSyncPeriod: -1, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		if err != nil {
			b.Fatal(err)
		}
		p.SetSynced()
		h := &harness{p: p, b: be}
		populate(h, n)
		p.Sync(context.Background())
		ctx := context.Background()
		// The proxy's memory with n Services: the objects (as an informer
		// holds them) plus the computed and programmed state.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.Logf("services=%d: heap in use %.1f MiB after programming", n, float64(ms.HeapInuse)/(1<<20))
		b.Run(fmt.Sprintf("services=%d/new-service", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("new%d", i)
				h.svc(service("default", name, fmt.Sprintf("10.97.%d.%d", (i/250)%250, i%250+1), []v1.ServicePort{tcp("http", 80, 0)}))
				h.eps(endpointsOf(name, n+i, 0))
				p.Sync(ctx)
			}
		})
		b.Run(fmt.Sprintf("services=%d/endpoint-change", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				h.eps(endpointsOf("s7", 7, i+1))
				p.Sync(ctx)
			}
		})
		b.Run(fmt.Sprintf("services=%d/full-rewrite", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := be.Resync(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		be.Close()
		fd.Close()
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
}

// newDryRunHarness is a synced IPv4 proxy over a dry-run backend.
func newDryRunHarness(b *testing.B) *harness {
	b.Helper()
	be := NewDryRun(Config{Families: []proxy.Family{proxy.IPv4}})
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: be, FullSyncPeriod: -1})
	if err != nil {
		b.Fatal(err)
	}
	p.SetSynced()
	return &harness{p: p, b: be}
}

// BenchmarkDryRun is the proxy's own cost per change, the part a node pays
// whatever the kernel does: view, conflict check, rule computation, diff.
func BenchmarkDryRun(b *testing.B) {
	for _, n := range benchSizes() {
		h := newDryRunHarness(b)
		p := h.p
		populate(h, n)
		p.Sync(context.Background())
		ctx := context.Background()
		b.Run(fmt.Sprintf("services=%d/endpoint-change", n), func(b *testing.B) {
			// Built beforehand so only the proxy's work is timed.
			next := make([]*discovery.EndpointSlice, 256)
			for i := range next {
				next[i] = endpointsOf("s7", 7, i+1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.eps(next[i%len(next)])
				p.Sync(ctx)
			}
		})
		b.Run(fmt.Sprintf("services=%d/new-service", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				name := fmt.Sprintf("new%d", i)
				h.svc(service("default", name, fmt.Sprintf("10.97.%d.%d", (i/250)%250, i%250+1), []v1.ServicePort{tcp("http", 80, 0)}))
				h.eps(endpointsOf(name, n+i, 0))
				p.Sync(ctx)
			}
		})
	}
}

// BenchmarkDryRunLargeService is the dry-run proxies' work in `myriad sim
// --proxies` (docs/bench/proxy.md): one Service whose 200-endpoint slice
// changes one endpoint per sync, as a scaled Deployment's pods come and go.
func BenchmarkDryRunLargeService(b *testing.B) {
	h := newDryRunHarness(b)
	p := h.p
	h.svc(service("default", "web", "10.96.0.10", []v1.ServicePort{tcp("http", 80, 30080)}))
	eps := make([]ep, 200)
	for j := range eps {
		eps[j] = readyEP(fmt.Sprintf("10.128.%d.%d", j/250, j%250+1), fmt.Sprintf("node-%d", j%50))
	}
	ctx := context.Background()
	h.eps(slice("default", "web", "web-1", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, eps...))
	p.Sync(ctx)
	// Built beforehand so only the proxy's work is timed; consecutive
	// slices differ in one endpoint.
	next := make([]*discovery.EndpointSlice, 256)
	for i := range next {
		eps[i%len(eps)] = readyEP(fmt.Sprintf("10.129.%d.%d", i/250, i%250+1), "node-b")
		next[i] = slice("default", "web", "web-1", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, eps...)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.eps(next[i%len(next)])
		p.Sync(ctx)
	}
}

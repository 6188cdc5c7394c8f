package nftables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/proxy"
)

// TestKernelAcceptsEveryRuleKind programs, in a throwaway network
// namespace, Services exercising every rule the computer emits in both
// families (dual-stack, node ports, external IPs, affinity, Local
// policies, no endpoints, a cluster CIDR), then changes and deletes them:
// the kernel must accept every transaction. The traffic test covers IPv4
// end to end; this one is what covers the IPv6 expressions.
func TestKernelAcceptsEveryRuleKind(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ns := fmt.Sprintf("mpk%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	fd, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := New(Config{NetNSFd: int(fd.Fd()), ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16"), netip.MustParsePrefix("fd00:244::/48")}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	metrics := proxy.NewMetrics(nil)
	p, err := proxy.New(proxy.Config{NodeName: testNode, Backend: b, FullSyncPeriod: -1, Metrics: metrics,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	h := &harness{p: p, b: b}
	ctx := context.Background()
	failures := func() float64 { return testutil.ToFloat64(metrics.SyncFailures) }
	sync := func(what string) {
		t.Helper()
		before := failures()
		p.Sync(ctx)
		if failures() != before {
			t.Fatalf("%s: the kernel refused the transaction (see the log)", what)
		}
		if _, err := b.Resync(ctx); err != nil {
			t.Fatalf("%s: full rewrite: %v", what, err)
		}
	}
	dual := func(s *v1.Service) {
		s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, "fd00::"+s.Spec.ClusterIP[len("10.96.0."):])
		s.Spec.Type = v1.ServiceTypeLoadBalancer
		n := s.Spec.ClusterIP[len("10.96.0."):]
		s.Spec.ExternalIPs = []string{"192.0.2." + n, "2001:db8::" + n}
	}
	h.svc(service("ns", "a", "10.96.0.1", []v1.ServicePort{tcp("http", 80, 30080), {Name: "dns", Port: 53, NodePort: 30053, Protocol: v1.ProtocolUDP}}, dual,
		func(s *v1.Service) { s.Spec.SessionAffinity = v1.ServiceAffinityClientIP }))
	h.svc(service("ns", "b", "10.96.0.2", []v1.ServicePort{tcp("http", 80, 30081)}, dual, func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	}))
	h.svc(service("ns", "d", "10.96.0.4", []v1.ServicePort{tcp("http", 80, 30084)}, dual, func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
	}))
	h.svc(service("ns", "c", "10.96.0.3", []v1.ServicePort{tcp("http", 80, 30082), {Name: "sctp", Port: 9, Protocol: v1.ProtocolSCTP}}, dual, func(s *v1.Service) {
		s.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: "203.0.113.3"}, {IP: "2001:db8:1::3"}}
		s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.168.0.0/16", "2001:db8:2::/48"}
	}))
	for _, name := range []string{"a", "b", "d"} {
		h.eps(slice("ns", name, name+"-4", discovery.AddressTypeIPv4, "http", 8080, v1.ProtocolTCP, readyEP("10.244.1.1", testNode), readyEP("10.244.2.1", "node-b")))
		h.eps(slice("ns", name, name+"-6", discovery.AddressTypeIPv6, "http", 8080, v1.ProtocolTCP, readyEP("fd00:244::1", testNode), readyEP("fd00:244::2", "node-b")))
		h.eps(slice("ns", name, name+"-u4", discovery.AddressTypeIPv4, "dns", 53, v1.ProtocolUDP, readyEP("10.244.1.1", testNode)))
		h.eps(slice("ns", name, name+"-u6", discovery.AddressTypeIPv6, "dns", 53, v1.ProtocolUDP, readyEP("fd00:244::1", testNode)))
	}
	sync("create")
	for _, fam := range []proxy.Family{proxy.IPv4, proxy.IPv6} {
		out := b.Render(fam)
		for _, want := range []string{"lb-addr-2-affinity-10800s", "lb-nodeport-1", "goto reject-chain", "goto lb-local-origin-nodeport-2", "goto firewall-ns/c/tcp/http", "daddr . meta l4proto . th dport vmap @firewall-ips"} {
			if !strings.Contains(out, want) {
				t.Fatalf("%s table lacks %q:\n%s", fam, want, out)
			}
		}
	}
	h.eps(slice("ns", "a", "a-6", discovery.AddressTypeIPv6, "http", 8080, v1.ProtocolTCP, readyEP("fd00:244::3", "node-c")))
	h.eps(slice("ns", "a", "a-u6", discovery.AddressTypeIPv6, "dns", 53, v1.ProtocolUDP, readyEP("fd00:244::3", "node-c")))
	sync("change")
	for _, name := range []string{"a", "b", "c", "d"} {
		p.OnService(types.NamespacedName{Namespace: "ns", Name: name}, nil)
	}
	sync("delete")
	for _, tb := range b.tables {
		if len(tb.frags) != 0 || len(tb.lbs) != 0 || len(tb.hairpin) != 0 {
			t.Fatalf("%s: state left after deleting everything", tb.fam)
		}
	}
}

type recordedEvents []string

func (e *recordedEvents) Eventf(_ runtime.Object, typ, reason, f string, args ...any) {
	*e = append(*e, typ+" "+reason+" "+fmt.Sprintf(f, args...))
}

// A kernel that cannot forward SCTP: its ports are reported and skipped,
// the rest of the Service programmed.
func TestSCTPUnsupportedIsSkipped(t *testing.T) {
	b := NewDryRun(Config{Families: []proxy.Family{proxy.IPv4}})
	b.probeProtocols(func() error { return errors.New("Operation not supported") })
	if b.Supports(v1.ProtocolSCTP) || !b.Supports(v1.ProtocolTCP) || !b.Supports(v1.ProtocolUDP) {
		t.Fatalf("after a failed probe: SCTP %v TCP %v UDP %v", b.Supports(v1.ProtocolSCTP), b.Supports(v1.ProtocolTCP), b.Supports(v1.ProtocolUDP))
	}
	var ev recordedEvents
	metrics := proxy.NewMetrics(nil)
	p, err := proxy.New(proxy.Config{NodeName: testNode, Families: []proxy.Family{proxy.IPv4}, Backend: b, FullSyncPeriod: -1, Metrics: metrics, Recorder: &ev})
	if err != nil {
		t.Fatal(err)
	}
	p.SetSynced()
	p.OnService(types.NamespacedName{Namespace: "ns", Name: "s"}, service("ns", "s", "10.96.0.9", []v1.ServicePort{tcp("http", 80, 0), {Name: "sig", Port: 3868, Protocol: v1.ProtocolSCTP}}))
	p.Sync(context.Background())
	if out := b.Render(proxy.IPv4); !strings.Contains(out, "10.96.0.9 . tcp . 80") || strings.Contains(out, "sctp") {
		t.Fatalf("rules:\n%s", out)
	}
	if len(ev) != 1 || ev[0] != "Warning ServicePortNotProgrammed ns/s/sctp/sig: protocol SCTP is not supported by the proxy's backend" {
		t.Fatalf("events %q", ev)
	}
	if got := testutil.ToFloat64(metrics.SkippedPorts.WithLabelValues("unprogrammable")); got != 1 {
		t.Fatalf("skipped ports gauge %v", got)
	}
}

// The probe on this machine's kernel, in a throwaway namespace: SCTP is
// supported, and the probe leaves no table behind.
func TestSCTPProbeOnThisKernel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ns := fmt.Sprintf("mps%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Skipf("network namespaces unavailable: %v %s", err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	fd, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	b, err := New(Config{NetNSFd: int(fd.Fd())})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Supports(v1.ProtocolSCTP) {
		t.Fatal("this kernel forwards SCTP (nf_tables, conntrack), but the probe said no")
	}
	tables, err := b.w.(*kernel).conn.ListTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if strings.HasPrefix(tb.Name, "myriad-proxy-probe") {
			t.Fatalf("the probe left table %s behind", tb.Name)
		}
	}
}

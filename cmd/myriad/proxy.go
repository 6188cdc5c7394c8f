package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/proxy/nftables"
)

// runProxy is `myriad proxy --kubeconfig K --node NAME`: the per-node
// service proxy (kube-proxy's job) on nf_tables, or computing the same
// rules without a kernel (--backend dry-run).
func runProxy(ctx context.Context, args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("myriad proxy", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server, as system:kube-proxy (required; `myriad kubeconfig --user system:kube-proxy`)")
	node := fs.String("node", "", "this node's name (required)")
	backend := fs.String("backend", "nftables", "nftables: program the kernel; dry-run: compute the same changes, write nothing")
	families := fs.String("families", "ipv4,ipv6", "IP families to program")
	clusterCIDRs := fs.String("cluster-cidr", "", "comma-separated pod CIDRs: traffic to a cluster IP from outside them is masqueraded")
	masqueradeAll := fs.Bool("masquerade-all", false, "masquerade all traffic to cluster IPs, whatever its source (then --cluster-cidr does not matter)")
	hcNodePorts := fs.Bool("health-check-node-ports", true, "serve the healthCheckNodePort of LoadBalancer Services with externalTrafficPolicy Local")
	hcAddress := fs.String("health-check-address", "", "address the health check node ports listen on (default: all)")
	protocols := fs.String("protocols", "TCP,UDP,SCTP", "protocols the kernel can forward; ports of others are reported and skipped")
	minSync := fs.Duration("min-sync-period", proxy.DefaultMinSyncPeriod, "shortest time between two rule syncs (changes within it are batched)")
	syncPeriod := fs.Duration("sync-period", 30*time.Second, "longest time between two rule syncs")
	fullSync := fs.Duration("full-sync-period", time.Hour, "how often all rules are rewritten in one transaction to repair drift (negative: never)")
	healthAddr := fs.String("healthz-bind-address", "0.0.0.0:10256", "serve /healthz and /livez here; empty: off")
	metricsAddr := fs.String("metrics-bind-address", "127.0.0.1:10249", "serve /metrics here; empty: off")
	qps := fs.Float64("kube-api-qps", 5, "client QPS to the API server (kube-proxy's default)")
	burst := fs.Int("kube-api-burst", 10, "client burst to the API server")
	netnsPath := fs.String("netns", "", "program the rules in this network namespace (e.g. /var/run/netns/NAME) instead of the process's own")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" || *node == "" {
		return errors.New("myriad proxy: --kubeconfig and --node are required")
	}
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	bcfg := nftables.Config{Logger: log, MasqueradeAll: *masqueradeAll}
	for _, f := range splitList(*families) {
		switch strings.ToLower(f) {
		case "ipv4":
			bcfg.Families = append(bcfg.Families, proxy.IPv4)
		case "ipv6":
			bcfg.Families = append(bcfg.Families, proxy.IPv6)
		default:
			return fmt.Errorf("myriad proxy: --families: unknown family %q", f)
		}
	}
	for _, c := range splitList(*clusterCIDRs) {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("myriad proxy: --cluster-cidr: %w", err)
		}
		bcfg.ClusterCIDRs = append(bcfg.ClusterCIDRs, p.Masked())
	}
	for _, p := range splitList(*protocols) {
		bcfg.Protocols = append(bcfg.Protocols, v1.Protocol(strings.ToUpper(p)))
	}
	var be *nftables.Backend
	switch *backend {
	case "nftables":
		if *netnsPath != "" {
			f, err := os.Open(*netnsPath)
			if err != nil {
				return fmt.Errorf("myriad proxy: --netns: %w", err)
			}
			defer f.Close()
			bcfg.NetNSFd = int(f.Fd())
		}
		if be, err = nftables.New(bcfg); err != nil {
			return err
		}
		defer be.Close()
	case "dry-run":
		be = nftables.NewDryRun(bcfg)
	default:
		return fmt.Errorf("myriad proxy: --backend must be nftables or dry-run, not %q", *backend)
	}

	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = float32(*qps), *burst
	rc.UserAgent = "myriad-proxy/" + *node
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kube-proxy", Host: *node})

	reg := prometheus.NewRegistry()
	p, err := proxy.New(proxy.Config{
		NodeName: *node, Families: bcfg.Families, MinSyncPeriod: *minSync, SyncPeriod: *syncPeriod,
		FullSyncPeriod: *fullSync, Backend: be, Recorder: recorder, Metrics: proxy.NewMetrics(reg), Logger: log,
		ServeHealthCheckNodePorts: *hcNodePorts, HealthCheckHost: *hcAddress,
	})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	serve := func(addr string, mux http.Handler) error {
		if addr == "" {
			return nil
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addr, err)
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		wg.Add(2)
		go func() { defer wg.Done(); _ = srv.Serve(ln) }()
		go func() { defer wg.Done(); <-ctx.Done(); _ = srv.Close() }()
		return nil
	}
	if err := serve(*healthAddr, p.HealthHandler()); err != nil {
		return err
	}
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if err := serve(*metricsAddr, metrics); err != nil {
		return err
	}

	log.Info("proxy starting", "node", *node, "backend", *backend, "families", *families)
	wait, err := proxy.Watch(ctx, client, p, 0)
	if wait != nil {
		defer func() { cancel(); wait() }()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	p.Run(ctx)
	return nil
}

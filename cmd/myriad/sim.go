package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/myriad-k8s/myriad/internal/proxy"
	"github.com/myriad-k8s/myriad/internal/sim"
)

func runSim(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("myriad sim", flag.ContinueOnError)
	var cfg sim.Config
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (required)")
	fs.IntVar(&cfg.Nodes, "nodes", 100, "hollow nodes to run")
	fs.StringVar(&cfg.NamePrefix, "name-prefix", "hollow-node-", "node name prefix; nodes are <prefix><index>")
	fs.IntVar(&cfg.FirstIndex, "first-index", 0, "index of the first node (to run several simulators side by side)")
	cpu := fs.String("cpu", "32", "CPU capacity of each node")
	mem := fs.String("memory", "256Gi", "memory capacity of each node")
	fs.IntVar(&cfg.Pods, "pods", 110, "pod capacity of each node")
	labels := fs.String("labels", "", "extra node labels, k=v,k=v")
	taints := fs.String("taints", "", "node taints, key[=value]:Effect,...")
	zones := fs.String("zones", "", "zones spread over the nodes, comma-separated (default sim-zone-a,b,c)")
	fs.StringVar(&cfg.InstanceType, "instance-type", "", "node.kubernetes.io/instance-type (default hollow.32xlarge)")
	fs.IntVar(&cfg.StatusImages, "status-images", 0, "images listed in each Node status (default 0; 50, about 15 KB, with --full-status-heartbeat)")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", 40*time.Second, "Lease leaseDurationSeconds")
	fs.DurationVar(&cfg.RenewInterval, "renew-interval", 10*time.Second, "Lease renewal (heartbeat) period")
	fs.DurationVar(&cfg.NodeStatusInterval, "node-status-interval", time.Minute, "Node status write period when nothing changed (KEP-0009's 60 s; today's kubelet defaults its nodeStatusReportFrequency to 5m)")
	fs.BoolVar(&cfg.FullStatusHeartbeat, "full-status-heartbeat", false, "heartbeat with the full Node status every --renew-interval instead of Leases (pre-KEP-0009)")
	podWatch := fs.String("pod-watch", string(sim.PodWatchPerNode), "per-node (one watch per node, as kubelets) or shared (one watch for all)")
	fs.DurationVar(&cfg.PodStartupDelay, "pod-startup-delay", time.Second, "admission to Running")
	fs.DurationVar(&cfg.PodStartupJitter, "pod-startup-jitter", 0, "± uniform jitter on the startup delay (default a fifth of --pod-startup-delay; negative: none)")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed of the startup jitter, to repeat a run (default random; logged at start)")
	fs.DurationVar(&cfg.TerminationDelay, "termination-delay", time.Second, "containers terminated to grace-0 delete, at most the grace period")
	fs.DurationVar(&cfg.JobRunTime, "job-run-time", 5*time.Second, "how long Job pods run (unless annotated "+sim.AnnotationRunSeconds+")")
	fs.DurationVar(&cfg.GreedyListInterval, "greedy-list-interval", 0, "if > 0, every node lists all Services this often (the Civis greedy DaemonSet)")
	fs.IntVar(&cfg.HeartbeatWorkers, "heartbeat-workers", 0, "workers for Lease renewals and Node status (default: one second of heartbeats, nodes/renew-interval, at least 64)")
	fs.IntVar(&cfg.PodWorkers, "pod-workers", 0, "workers for pod status writes and deletes (default: one per node, at least 128)")
	fs.IntVar(&cfg.Proxies, "proxies", 0, "run a dry-run service proxy (myriad proxy --backend dry-run) with its own watches on this many nodes, and report network programming latency")
	fs.DurationVar(&cfg.ProxyMinSyncPeriod, "proxy-min-sync-period", proxy.DefaultMinSyncPeriod, "with --proxies: shortest time between two rule syncs of each proxy (myriad proxy --min-sync-period; upstream kube-proxy defaults to 1s)")
	fs.IntVar(&cfg.GreedyWorkers, "greedy-workers", 0, "workers for greedy lists (default: one second of lists, at least 16)")
	failNodes := fs.String("fail-nodes", "", "nodes that stop heartbeating (and handling pods) --fail-after registration, to test node lifecycle: a count N (the first N nodes) or a comma-separated list of names")
	fs.DurationVar(&cfg.Fail.After, "fail-after", 0, "with --fail-nodes: how long after every node registered they fail")
	fs.DurationVar(&cfg.Fail.RecoverAfter, "recover-after", 0, "with --fail-nodes: how long after failing they recover (0: never)")
	var qps float64
	fs.Float64Var(&qps, "qps", 0, "client-side QPS limit for all nodes together (0: none)")
	fs.IntVar(&cfg.Burst, "burst", 0, "client-side burst with --qps")
	fs.IntVar(&cfg.NodesPerConnection, "nodes-per-connection", 0, "nodes sharing one HTTP/2 connection for their pod watches and writes (default 50; a kubelet has one of its own)")
	fs.BoolVar(&cfg.HeartbeatsOverHTTP2, "heartbeats-over-http2", false, "send Lease renewals and Node status updates over the shared HTTP/2 connections too (default: their own HTTP/1.1 keep-alive connections, which cost the simulator less CPU)")
	fs.Func("node-identity", "whom each hollow node's requests act as: impersonate (system:node:<name> via impersonation headers; the credentials must allow impersonation), token (each node's own bearer token from --node-token-file) or self (the kubeconfig's own identity). Default: token with --node-token-file, else impersonate", func(v string) error { cfg.NodeIdentity = sim.NodeIdentity(v); return nil })
	nodeTokenFile := fs.String("node-token-file", "", "static token file (the API server's --token-auth-file CSV) holding a token for user system:node:<name> of every node: each node authenticates as itself with it")
	writeNodeTokens := fs.String("write-node-tokens", "", "write a fresh token for each of the --nodes (by --name-prefix and --first-index) to this file, in --token-auth-file format, and exit; start the API server with --token-auth-file FILE and the simulator with --node-token-file FILE")
	metricsAddr := fs.String("metrics-address", "", "serve Prometheus /metrics, /debug/pprof/ and the node control API here, e.g. 127.0.0.1:0 (default: off): "+
		"POST /fail?node=NAME[,NAME] stops nodes heartbeating, POST /recover?node=NAME[,NAME] brings them back, GET /failed lists them. "+
		"No authentication: keep it on loopback")
	metricsAPIAddr := fs.String("metrics-api-address", "", "serve the resource metrics API (metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics, as metrics-server) here, e.g. 127.0.0.1:8443 (default: off). "+
		"Pod usage is the pod's "+sim.AnnotationCPUUsage+" / "+sim.AnnotationMemoryUsage+" annotation, else --usage-fraction of its requests. "+
		"Plain HTTP without authentication (unless --register-metrics-api): keep it on loopback")
	registerMetricsAPI := fs.Bool("register-metrics-api", false, "with --metrics-api-address: serve the metrics API over TLS (self-signed, for Service kube-system/metrics-server) to the API server's front proxy only, "+
		"and register it as the APIService v1beta1.metrics.k8s.io with that Service and an EndpointSlice pointing here, so kubectl top and the HPA controller read it through the API server")
	fs.Float64Var(&cfg.UsageFraction, "usage-fraction", 0.5, "share of its requests a pod without usage annotations uses, as the metrics API reports it (negative: none)")
	kubeletPort := fs.Int("kubelet-port", 0, "port of the hollow nodes' kubelet API (logs, exec, attach, port-forward; one HTTPS listener for all nodes, reported in every Node's status): 0 picks a free one, -1 turns it off")
	fs.StringVar(&cfg.Kubelet.Address, "kubelet-address", "127.0.0.1", "IP the kubelet API listens on and the API server dials: every node's InternalIP and the serving certificate's IP SAN")
	fs.BoolVar(&cfg.Kubelet.Anonymous, "kubelet-anonymous", false, "let kubelet API requests in without a client certificate from the cluster CA (default: required)")
	fs.DurationVar(&cfg.Kubelet.CertificateTimeout, "kubelet-certificate-timeout", time.Minute, "how long to wait for the kubernetes.io/kubelet-serving signer to issue the kubelet API's serving certificate")
	maxProcs := fs.Int("max-procs", 1, "Go threads running at once (GOMAXPROCS; 0: one per core; the GOMAXPROCS environment variable wins). "+
		"One keeps the simulator off the control plane's cores and costs less CPU than two: 10,000 idle nodes hand work between goroutines a few thousand times a second")
	statusEvery := fs.Duration("status-interval", 10*time.Second, "print a status line this often (0: never)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *writeNodeTokens != "" {
		return writeNodeTokenFile(*writeNodeTokens, sim.NodeNames(cfg))
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if *nodeTokenFile != "" {
		tokens, err := readNodeTokenFile(*nodeTokenFile)
		if err != nil {
			return err
		}
		cfg.NodeTokens = tokens
		if cfg.NodeIdentity == "" {
			cfg.NodeIdentity = sim.NodeIdentityToken
		}
	}
	if os.Getenv("GOMAXPROCS") == "" && *maxProcs > 0 {
		runtime.GOMAXPROCS(*maxProcs)
	}
	if os.Getenv("GOGC") == "" {
		// Most of the heap is long-lived (watches, cached objects); a higher
		// GC target trades some of the 2 GiB budget for far less GC CPU.
		debug.SetGCPercent(400)
	}
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	if *level != "debug" {
		// client-go logs every timed-out or cancelled request through klog;
		// at 10,000 nodes that floods the terminal, and the status line
		// counts the errors anyway.
		klog.LogToStderr(false)
		klog.SetOutput(io.Discard)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	cfg.RESTConfig, cfg.Logger, cfg.QPS = rc, log, float32(qps)
	cfg.PodWatch = sim.PodWatch(*podWatch)
	cfg.Kubelet.Enabled, cfg.Kubelet.Port = *kubeletPort >= 0, max(*kubeletPort, 0)
	if cfg.CPU, err = resource.ParseQuantity(*cpu); err != nil {
		return fmt.Errorf("--cpu: %w", err)
	}
	if cfg.Memory, err = resource.ParseQuantity(*mem); err != nil {
		return fmt.Errorf("--memory: %w", err)
	}
	if cfg.Labels, err = parseLabels(*labels); err != nil {
		return err
	}
	if cfg.Taints, err = parseTaints(*taints); err != nil {
		return err
	}
	cfg.Zones = splitList(*zones)
	if cfg.Fail.Count, cfg.Fail.Nodes, err = sim.ParseFailNodes(*failNodes); err != nil {
		return fmt.Errorf("--fail-nodes: %w", err)
	}

	var reg *prometheus.Registry
	if *metricsAddr != "" {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector())
		cfg.Metrics = reg
	}
	s, err := sim.New(cfg)
	if err != nil {
		return err
	}
	if reg != nil {
		// Served from before Start, so registration can be watched; the
		// control API answers 409 to a recovery until then.
		l, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.Handle("/", s.ControlHandler()) // POST /fail, POST /recover, GET /failed
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		fmt.Fprintf(os.Stderr, "serving metrics on http://%s/metrics, node control on http://%s/fail and /recover\n", l.Addr(), l.Addr())
	}
	if *registerMetricsAPI {
		if *metricsAPIAddr == "" {
			return errors.New("--register-metrics-api needs --metrics-api-address")
		}
		m, err := s.RegisterMetricsAPI(ctx, rc, sim.MetricsAPIService{Listen: *metricsAPIAddr})
		if err != nil {
			return err
		}
		defer func() {
			closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = m.Close(closeCtx)
		}()
		fmt.Fprintf(os.Stderr, "serving metrics.k8s.io/v1beta1 on https://%s, registered as APIService v1beta1.metrics.k8s.io\n", m.Addr())
	} else if *metricsAPIAddr != "" {
		l, err := net.Listen("tcp", *metricsAPIAddr)
		if err != nil {
			return fmt.Errorf("--metrics-api-address: %w", err)
		}
		srv := &http.Server{Handler: s.MetricsAPIHandler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		fmt.Fprintf(os.Stderr, "serving metrics.k8s.io/v1beta1 on http://%s/apis/metrics.k8s.io/v1beta1\n", l.Addr())
	}
	start := time.Now()
	fmt.Fprintf(stdout, "registering %d hollow nodes...\n", cfg.Nodes)
	if err := s.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d hollow nodes registered in %s; running until interrupted\n", cfg.Nodes, time.Since(start).Round(time.Millisecond))
	if addr := s.KubeletAddress(); addr != "" {
		fmt.Fprintf(stdout, "serving the hollow nodes' kubelet API on https://%s\n", addr)
	}
	defer s.Stop()
	if *statusEvery <= 0 {
		<-ctx.Done()
		if cfg.Proxies > 0 {
			st := s.Stats()
			pp := st.ProxyProgramming
			fmt.Fprintf(stdout, "proxies %d: network programming latency p50 %s p99 %s over %d observations; %d watch objects decoded, %d shared\n", cfg.Proxies, pp.Quantile(0.5), pp.Quantile(0.99), pp.Count(), st.ProxyDecodes, st.ProxyDecodesShared)
		}
		return nil
	}
	t := time.NewTicker(*statusEvery)
	defer t.Stop()
	prev, prevAt := s.Stats(), time.Now()
	for {
		select {
		case <-ctx.Done():
			st := s.Stats()
			fmt.Fprintf(stdout, "stopped after %s: %d renewals (%d errors), lateness p50 %s p99 %s max %s, max renew gap %s; heartbeat dispatch p99 %s, max %d of %d workers busy, %d found all busy; cpu %.1f s, rss %d MiB\n",
				time.Since(start).Round(time.Second), st.Renewals, st.RenewalErrors, st.LatenessP50, st.LatenessP99, st.LatenessMax, st.MaxRenewGap.Round(time.Millisecond),
				st.HeartbeatDispatchP99, st.HeartbeatMaxBusy, st.HeartbeatWorkers, st.HeartbeatSaturated, st.CPUSeconds, st.RSSBytes>>20)
			if cfg.Proxies > 0 {
				pp := st.ProxyProgramming
				fmt.Fprintf(stdout, "proxies %d: network programming latency p50 %s p99 %s over %d observations; %d watch objects decoded, %d shared\n", cfg.Proxies, pp.Quantile(0.5), pp.Quantile(0.99), pp.Count(), st.ProxyDecodes, st.ProxyDecodesShared)
			}
			return nil
		case now := <-t.C:
			st := s.Stats()
			fmt.Fprintln(stdout, statusLine(st, prev, now.Sub(prevAt)))
			prev, prevAt = st, now
		}
	}
}

// statusLine summarizes the interval between two Stats snapshots.
func statusLine(st, prev sim.Stats, d time.Duration) string {
	secs := d.Seconds()
	recent := st.Lateness.Sub(prev.Lateness)
	return fmt.Sprintf("nodes %d/%d (%d failed) | pods running %d starting %d succeeded %d rejected %d | renewals %.1f/s (%d errors) lateness p50 %s p99 %s, max gap %s | cpu %.3f cores rss %d MiB",
		st.Registered, st.Nodes, st.Failed,
		st.PodsRunning, st.PodsStarting, st.PodsSucceeded, st.PodsRejected,
		float64(st.Renewals-prev.Renewals)/secs, st.RenewalErrors,
		recent.Quantile(0.5).Round(10*time.Microsecond), recent.Quantile(0.99).Round(10*time.Microsecond), st.MaxRenewGap.Round(time.Millisecond),
		(st.CPUSeconds-prev.CPUSeconds)/secs, st.RSSBytes>>20)
}

func parseLabels(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(v) {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--labels: %q is not key=value", kv)
		}
		out[k] = val
	}
	return out, nil
}

func parseTaints(v string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, s := range splitList(v) {
		kv, effect, ok := strings.Cut(s, ":")
		if !ok {
			return nil, fmt.Errorf("--taints: %q is not key[=value]:Effect", s)
		}
		k, val, _ := strings.Cut(kv, "=")
		e := corev1.TaintEffect(effect)
		switch e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--taints: unknown effect %q in %q", effect, s)
		}
		out = append(out, corev1.Taint{Key: k, Value: val, Effect: e})
	}
	return out, nil
}

// writeNodeTokenFile writes fresh node tokens to path (0600: they are
// credentials).
func writeNodeTokenFile(path string, names []string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := sim.WriteNodeTokens(f, names); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readNodeTokenFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--node-token-file: %w", err)
	}
	defer f.Close()
	return sim.ReadNodeTokens(f)
}

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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/controllers"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
)

// runControllers is `myriad controllers`: the controller manager against
// any API server, optionally as one of several leader-elected replicas.
func runControllers(ctx context.Context, args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("myriad controllers", flag.ContinueOnError)
	var cfg controllers.Config
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (required)")
	fs.Func("controllers", "comma-separated controllers to run: * for all (default), name to enable, -name to disable", func(v string) error {
		cfg.Controllers = splitList(v)
		return nil
	})
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", false, "run controllers only while holding the Lease kube-system/kube-controller-manager")
	fs.StringVar(&cfg.Identity, "identity", "", "leader election identity (default hostname_pid)")
	fs.BoolVar(&cfg.UseServiceAccountCredentials, "use-service-account-credentials", false, "run each controller as its own ServiceAccount in kube-system (tokens from the TokenRequest API), not as this process's identity")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before giving up")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "interval between renewals and acquire attempts")
	fs.DurationVar(&cfg.NodeLifecycle.GracePeriod, "node-monitor-grace-period", 40*time.Second, "how long a node's Lease may go unrenewed before the node is Ready=Unknown")
	fs.DurationVar(&cfg.NodeLifecycle.MonitorPeriod, "node-monitor-period", 0, "how often node health is checked (default 5s, at most a quarter of the grace period)")
	fs.Float64Var(&cfg.NodeLifecycle.EvictionRate, "node-eviction-rate", 0.1, "nodes per second tainted NoExecute in a healthy zone")
	fs.Float64Var(&cfg.NodeLifecycle.SecondaryEvictionRate, "secondary-node-eviction-rate", 0.01, "nodes per second tainted NoExecute in a partially disrupted zone")
	fs.Float64Var(&cfg.NodeLifecycle.UnhealthyZoneThreshold, "unhealthy-zone-threshold", 0.55, "fraction of a zone's nodes not Ready beyond which the zone is partially disrupted")
	fs.IntVar(&cfg.NodeLifecycle.LargeClusterSizeThreshold, "large-cluster-size-threshold", 50, "zones up to this size stop evicting when partially disrupted")
	fs.StringVar(&cfg.ClusterSigning.CertFile, "cluster-signing-cert-file", "", "PEM CA certificate the csrsigning controller issues certificates from (with --cluster-signing-key-file; none: no signing)")
	fs.StringVar(&cfg.ClusterSigning.KeyFile, "cluster-signing-key-file", "", "PEM PKCS#8 key of --cluster-signing-cert-file")
	fs.StringVar(&cfg.ServiceAccountKeyFile, "service-account-private-key-file", "", "PEM private key the API server signs ServiceAccount tokens with (myriad up's <data-dir>/sa.key), to fill service-account-token Secrets (none: not filled)")
	fs.DurationVar(&cfg.ClusterSigning.Duration, "cluster-signing-duration", signer.DefaultDuration, "longest validity of an issued certificate")
	qps := fs.Float64("kube-api-qps", 500, "client QPS to the API server")
	burst := fs.Int("kube-api-burst", 1000, "client burst to the API server")
	metricsAddr := fs.String("metrics-address", "", "address to serve /metrics and /debug/pprof on (empty: none)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	rc.QPS, rc.Burst = float32(*qps), *burst
	cfg.RESTConfig = rc
	cfg.Logger = log
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cfg.Metrics = reg
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	return controllers.Run(ctx, cfg)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/scheduler"
)

// runScheduler is `myriad scheduler --kubeconfig FILE`: the scheduler
// alone against any Kubernetes API server.
func runScheduler(ctx context.Context, args []string, _ io.Writer) error {
	fs := flag.NewFlagSet("myriad scheduler", flag.ContinueOnError)
	var cfg scheduler.Config
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (required)")
	fs.StringVar(&cfg.SchedulerName, "scheduler-name", "default-scheduler", "spec.schedulerName of the pods to schedule")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", true, "elect a leader on the Lease kube-system/kube-scheduler (as kube-scheduler)")
	fs.StringVar(&cfg.Identity, "identity", "", "identity in the Lease (default hostname_uuid)")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "Lease duration")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before giving up")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "wait between Lease attempts")
	equivalence := fs.Bool("equivalence-classes", true, "place pods with identical scheduling specs as a batch from one search")
	fs.IntVar(&cfg.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "stop searching after this percentage of nodes is feasible (0: adaptive, as upstream; 100: all)")
	fs.IntVar(&cfg.Parallelism, "parallelism", 0, "filtering goroutines (default GOMAXPROCS)")
	fs.IntVar(&cfg.BatchSize, "batch-size", 256, "largest equivalence-class batch")
	fs.BoolVar(&cfg.DisablePreemption, "disable-preemption", false, "never preempt lower-priority pods")
	fs.IntVar(&cfg.MaxConcurrentBinds, "max-concurrent-binds", 64, "pods/binding calls in flight (keep below the server's mutating-inflight limit)")
	qps := fs.Float64("kube-api-qps", 5000, "client QPS to the API server")
	burst := fs.Int("kube-api-burst", 10000, "client burst to the API server")
	metricsAddr := fs.String("metrics-address", "", "serve /metrics and /healthz on this address (e.g. 127.0.0.1:10259); empty: off")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("myriad scheduler: --kubeconfig is required")
	}
	cfg.DisableEquivalenceClasses = !*equivalence
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	cfg.Logger = log
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = float32(*qps), *burst
	cfg.RESTConfig = rc

	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	if *metricsAddr != "" {
		ln, err := net.Listen("tcp", *metricsAddr)
		if err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}
	log.Info("scheduler starting", "kubeconfig", *kubeconfig, "leaderElect", cfg.LeaderElect, "equivalenceClasses", *equivalence)
	return scheduler.Run(ctx, cfg)
}

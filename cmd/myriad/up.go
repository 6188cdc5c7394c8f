package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"

	"github.com/myriad-k8s/myriad/internal/controllers"
	"github.com/myriad-k8s/myriad/internal/controllers/certificates/signer"
	"github.com/myriad-k8s/myriad/internal/controllers/serviceaccount"
	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/pki"
	"github.com/myriad-k8s/myriad/internal/scheduler"
)

// controlPlaneFlags maps the shared flags of up and apiserver onto a Config.
func controlPlaneFlags(fs *flag.FlagSet) (*controlplane.Config, *string) {
	cfg := &controlplane.Config{}
	fs.StringVar(&cfg.DataDir, "data-dir", ".myriad", "directory for credentials, kubeconfig and the embedded store")
	fs.StringVar(&cfg.BindAddress, "bind-address", "127.0.0.1", "address to serve on")
	fs.IntVar(&cfg.SecurePort, "secure-port", 6443, "HTTPS port")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 400, "concurrent read-only requests before 429 (watches excluded)")
	fs.IntVar(&cfg.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", 200, "concurrent mutating requests before 429")
	fs.Int64Var(&cfg.MaxRequestBodyBytes, "max-request-body-bytes", 3<<20, "largest request body accepted (413 beyond)")
	fs.StringVar(&cfg.ServiceClusterIPRange, "service-cluster-ip-range", "10.96.0.0/12", "CIDR ClusterIPs are allocated from")
	fs.StringVar(&cfg.ServiceNodePortRange, "service-node-port-range", "30000-32767", "range NodePorts are allocated from")
	fs.DurationVar(&cfg.EventTTL, "event-ttl", time.Hour, "how long events are kept after their last write (negative: forever)")
	fs.StringVar(&cfg.AdmissionControlConfigFile, "admission-control-config-file", "", "AdmissionConfiguration file with admission plugins' configuration (PodSecurity)")
	fs.StringVar(&cfg.EncryptionProviderConfig, "encryption-provider-config", "", "EncryptionConfiguration file: which resources are encrypted at rest, and how")
	fs.Func("indexed-labels", "comma-separated label keys the watch caches index (besides app)", func(v string) error {
		cfg.IndexedLabels = splitList(v)
		return nil
	})
	fs.Func("tls-san", "comma-separated extra DNS names or IPs for the serving certificate", func(v string) error {
		cfg.ExtraSANs = splitList(v)
		return nil
	})
	cfg.Authorization.Modes = controlplane.ParseAuthorizationModes(controlplane.DefaultAuthorizationModes)
	fs.Func("authorization-mode", "comma-separated authorizers asked in order after system:masters: AlwaysAllow, AlwaysDeny, Node, RBAC, Webhook (default "+controlplane.DefaultAuthorizationModes+")", func(v string) error {
		cfg.Authorization.Modes = splitList(v)
		return nil
	})
	fs.StringVar(&cfg.Authorization.WebhookConfigFile, "authorization-webhook-config-file", "", "kubeconfig of the Webhook authorization mode's service")
	fs.DurationVar(&cfg.Authorization.WebhookCacheAuthorizedTTL, "authorization-webhook-cache-authorized-ttl", 5*time.Minute, "how long the webhook's allowed answers are cached (0: the default)")
	fs.DurationVar(&cfg.Authorization.WebhookCacheUnauthorizedTTL, "authorization-webhook-cache-unauthorized-ttl", 30*time.Second, "how long the webhook's denied answers are cached (0: the default)")
	serviceAccountFlags(fs, &cfg.ServiceAccounts)
	kubeletFlags(fs, &cfg.Kubelet)
	storageFlags(fs, cfg)
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	fs.BoolFunc("contention-profiling", "record blocking and mutex contention for /debug/pprof/block and /debug/pprof/mutex (as upstream's flag; costs a little on every lock)", func(v string) error {
		on, err := strconv.ParseBool(v)
		if on {
			runtime.SetBlockProfileRate(1)
			runtime.SetMutexProfileFraction(5)
		}
		return err
	})
	securityFlags(fs, cfg)
	flowControlFlags(fs, cfg)
	return cfg, level
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func runUp(ctx context.Context, args []string, _ io.Writer) error {
	return runControlPlane(ctx, "up", args)
}

// upComponents are the clients `myriad up` runs in-process: the scheduler
// and the controller manager, each electing a leader on its upstream Lease
// so more replicas (or upstream's own) can stand by beside it. They read
// through one shared informer factory (one decoded copy of each pod and
// node in the process), which lists and watches as the controller manager
// where it is not fed from the watch caches.
//
// The controllers sign certificate signing requests with the cluster CA
// that `myriad up` keeps in dataDir (ca.crt, ca.key).
func upComponents(fs *flag.FlagSet) func(log *slog.Logger, cfg *controlplane.Config) []controlplane.Component {
	runScheduler := fs.Bool("scheduler", true, "run the scheduler in-process")
	enabled := fs.String("controllers", "*", "controllers to run in-process: * for all, -name to disable one, empty for none")
	signingDuration := fs.Duration("cluster-signing-duration", signer.DefaultDuration, "longest validity of a certificate the csrsigning controller issues")
	loopbackTransport := fs.String("loopback-transport", controlplane.LoopbackTLS, "how the in-process scheduler and controllers reach the API server: tls (over the loopback address) or memory (call the handler chain in-process: no TCP, TLS or HTTP/2; same authentication, RBAC, flow control and audit)")
	return func(log *slog.Logger, cfg *controlplane.Config) []controlplane.Component {
		cfg.LoopbackTransport = *loopbackTransport
		dataDir := cfg.DataDir
		var out []controlplane.Component
		if *runScheduler {
			out = append(out, controlplane.Component{Name: "scheduler", Identity: pki.Identity{User: pki.SchedulerUser}, Run: func(ctx context.Context, rc *rest.Config, m prometheus.Registerer, shared informers.SharedInformerFactory) error {
				return scheduler.Run(ctx, scheduler.Config{RESTConfig: rc, LeaderElect: true, Logger: log, Metrics: m, Informers: shared})
			}})
		}
		if names := splitList(*enabled); len(names) > 0 {
			// Pods are refused until the default ServiceAccount exists:
			// the kubeconfig waits for the controller that makes it.
			cfg.WaitForDefaultServiceAccount = controllers.Enabled(names, serviceaccount.Name)
			out = append(out, controlplane.Component{Name: "controllers", Identity: pki.Identity{User: pki.ControllerManagerUser}, ReadsShared: true, Run: func(ctx context.Context, rc *rest.Config, m prometheus.Registerer, shared informers.SharedInformerFactory) error {
				return controllers.Run(ctx, controllers.Config{RESTConfig: rc, Controllers: names, LeaderElect: true, UseServiceAccountCredentials: true, Logger: log, Metrics: m, Informers: shared,
					ServiceAccountKeyFile: cfg.ServiceAccountSigningKeyFile(),
					ClusterSigning: signer.Options{
						CertFile: filepath.Join(dataDir, pki.CACertFile),
						KeyFile:  filepath.Join(dataDir, pki.CAKeyFile),
						Duration: *signingDuration,
					}})
			}})
		}
		return out
	}
}

func runAPIServer(ctx context.Context, args []string, _ io.Writer) error {
	return runControlPlane(ctx, "apiserver", args)
}

func runControlPlane(ctx context.Context, name string, args []string) error {
	fs := flag.NewFlagSet("myriad "+name, flag.ContinueOnError)
	cfg, level := controlPlaneFlags(fs)
	applyMemoryLimit := memoryLimitFlag(fs)
	var components func(*slog.Logger, *controlplane.Config) []controlplane.Component
	if name == "up" {
		components = upComponents(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := applyMemoryLimit(); err != nil {
		return err
	}
	log, err := newLogger(*level)
	if err != nil {
		return err
	}
	cfg.Logger = log
	if components != nil {
		cfg.Components = components(log, cfg)
	}
	return controlplane.Run(ctx, *cfg, nil)
}

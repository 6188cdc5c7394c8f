package controlplane

import (
	"fmt"
	"github.com/myriad-k8s/myriad/internal/apiserver/audit"
	"github.com/myriad-k8s/myriad/internal/apiserver/authnconfig"
	"github.com/prometheus/client_golang/prometheus"
	"log/slog"
	"path/filepath"
	"time"
)

// Config configures a control plane. Zero values take the stated defaults.
type Config struct {
	// DataDir holds credentials, the kubeconfig and the embedded store
	// (default ./.myriad).
	DataDir string
	// BindAddress to listen on (default 127.0.0.1); SecurePort (default 6443).
	BindAddress string
	SecurePort  int
	// Storage is "embedded" (default) or "etcd".
	Storage     string
	EtcdServers []string
	// MaxRequestsInflight (default 400) and MaxMutatingRequestsInflight
	// (default 200) bound concurrent non-long-running requests.
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// FlowControl configures API Priority and Fairness (flowcontrol.go),
	// which replaces the max-in-flight limits unless disabled.
	FlowControl FlowControlOptions
	// MaxRequestBodyBytes bounds request bodies (default 3 MiB).
	MaxRequestBodyBytes int64
	// ServiceClusterIPRange (default 10.96.0.0/12) and ServiceNodePortRange
	// (default 30000-32767).
	ServiceClusterIPRange string
	ServiceNodePortRange  string
	// IndexedLabels are extra label keys the watch caches index.
	IndexedLabels []string
	// EventTTL is how long events are kept after their last write
	// (default one hour; negative: forever).
	EventTTL time.Duration
	// Authorization selects the authorizers (authorization.go).
	Authorization AuthorizationConfig
	// ServiceAccounts configure ServiceAccount tokens (serviceaccounts.go).
	ServiceAccounts ServiceAccountOptions
	// ExtraSANs are more names/IPs for the serving certificate.
	ExtraSANs []string
	// Components run in-process once the server is ready (the scheduler
	// and controllers of `myriad up`); they stop before the server does.
	Components []Component
	// LoopbackTransport is how Components reach the API: LoopbackTLS
	// (default) or LoopbackMemory (components.go). Memory is cheaper per
	// call, but the controllers then create pods faster than the density
	// bench's hollow nodes start them (startup p99 3 s → 19–20 s at
	// 1,000×30 although every pod ran sooner), so it is not the default
	// until that is understood (docs/bench/api.md).
	LoopbackTransport string
	// WaitForDefaultServiceAccount delays writing the kubeconfig until the
	// components have made the default namespace's default ServiceAccount
	// (myriad up, whose controllers make it), so pods can be created the
	// moment it appears.
	WaitForDefaultServiceAccount bool
	// Metrics is the registry /metrics serves; components register on it
	// too. Default: a new registry.
	Metrics *prometheus.Registry
	// Authentication configures static tokens, JWT issuers, the token
	// webhook and anonymous access (package authnconfig).
	Authentication authnconfig.Options
	// EnableBootstrapTokenAuth accepts bootstrap tokens (kube-system
	// Secrets of type bootstrap.kubernetes.io/token) as bearer tokens,
	// upstream's --enable-bootstrap-token-auth: what kubelets joining with
	// --bootstrap-kubeconfig use. myriad up and apiserver turn it on.
	EnableBootstrapTokenAuth bool
	// Audit configures the audit log (package audit); off by default.
	Audit audit.Config
	// AdmissionControlConfigFile is upstream's
	// --admission-control-config-file (an AdmissionConfiguration; its
	// PodSecurity entry is read). Empty: PodSecurity's defaults.
	AdmissionControlConfigFile string
	// EncryptionProviderConfig is upstream's --encryption-provider-config
	// (an EncryptionConfiguration). Empty: nothing is encrypted.
	EncryptionProviderConfig string
	// Kubelet is how the API server reaches kubelets (kubelet.go).
	Kubelet KubeletOptions
	// Etcd configures the etcd backend beyond EtcdServers (etcdoptions.go).
	Etcd EtcdOptions
	// GoawayChance is the share of HTTP/2 requests told to reconnect, so
	// clients spread over several API servers (--goaway-chance, 0-0.02).
	GoawayChance float64
	// ShutdownTimeout bounds graceful shutdown (default 10 s).
	ShutdownTimeout time.Duration
	Logger          *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.DataDir == "" {
		c.DataDir = ".myriad"
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, fmt.Errorf("data dir %q: %w", c.DataDir, err)
	}
	c.DataDir = abs
	if c.BindAddress == "" {
		c.BindAddress = "127.0.0.1"
	}
	if c.SecurePort == 0 {
		c.SecurePort = 6443
	}
	if err := c.validateStorage(); err != nil {
		return c, err
	}
	switch c.LoopbackTransport {
	case "":
		c.LoopbackTransport = LoopbackTLS
	case LoopbackMemory, LoopbackTLS:
	default:
		return c, fmt.Errorf("loopback transport %q: want %s or %s", c.LoopbackTransport, LoopbackMemory, LoopbackTLS)
	}
	if c.MaxRequestsInflight == 0 {
		c.MaxRequestsInflight = 400
	}
	if c.MaxMutatingRequestsInflight == 0 {
		c.MaxMutatingRequestsInflight = 200
	}
	if c.MaxRequestBodyBytes == 0 {
		c.MaxRequestBodyBytes = 3 << 20
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// KubeconfigPath is where the admin kubeconfig is written.
func (c Config) KubeconfigPath() string { return filepath.Join(c.DataDir, "kubeconfig") }

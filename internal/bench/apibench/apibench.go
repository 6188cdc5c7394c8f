package apibench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/procstat"
)

// Content types client-go sends and accepts in this benchmark.
const (
	protobufType = "application/vnd.kubernetes.protobuf"
	jsonType     = "application/json"
)

// Stat is one measured call type: how many calls, how fast, how long each.
type Stat struct {
	Name   string        `json:"name"`
	Calls  int           `json:"calls"`
	Errors int           `json:"errors,omitempty"` // calls that failed (conflicts in the lease phase)
	Items  float64       `json:"itemsPerCall,omitempty"`
	Time   time.Duration `json:"timeNs"`
	PerSec float64       `json:"perSec"`
	P50    time.Duration `json:"p50Ns"`
	P90    time.Duration `json:"p90Ns"`
	P99    time.Duration `json:"p99Ns"`
	Max    time.Duration `json:"maxNs"`
	// ServerCPU is the server process's CPU time (user+system) during the
	// calls and CPUPerCall that divided by Calls; 0 when the server's CPU
	// cannot be read (a remote server). In-process, the client's CPU is
	// included.
	ServerCPU  time.Duration `json:"serverCpuNs,omitempty"`
	CPUPerCall time.Duration `json:"serverCpuPerCallNs,omitempty"`
	// ClientCPUPerCall is this process's CPU per call when the server runs
	// elsewhere: the load generator's share of the cores a local server
	// competes for.
	ClientCPUPerCall time.Duration `json:"clientCpuPerCallNs,omitempty"`
	// Target is the design target in words ("" if none); Met says whether
	// this run reached it.
	Target string `json:"target,omitempty"`
	Met    bool   `json:"met,omitempty"`
}

// ListAll is one unfiltered LIST of every pod, streamed and discarded (the
// client does not decode it, so an in-process server's RSS is the server's).
type ListAll struct {
	ContentType string        `json:"contentType"`
	Bytes       int64         `json:"bytes"`
	Time        time.Duration `json:"timeNs"`
	// RSSBefore and PeakRSS are the server's resident memory before and at
	// its highest during the call; 0 when it could not be observed.
	RSSBefore int64 `json:"rssBeforeBytes,omitempty"`
	PeakRSS   int64 `json:"peakRssBytes,omitempty"`
}

// Result holds the measurements of one Run.
type Result struct {
	Server     string    `json:"server"`
	InProcess  bool      `json:"inProcess"`
	Start      time.Time `json:"start"`
	GoMaxProcs int       `json:"gomaxprocs"`
	Pods       int       `json:"pods"`
	Nodes      int       `json:"nodes"`
	Namespaces int       `json:"namespaces"`
	Apps       int       `json:"apps"`
	Workers    int       `json:"workers"`

	Create          *Stat     `json:"create,omitempty"`
	Get             *Stat     `json:"get,omitempty"`
	ListByNode      *Stat     `json:"listByNode,omitempty"`
	ListByLabel     *Stat     `json:"listByLabel,omitempty"`
	ListByNamespace *Stat     `json:"listByNamespace,omitempty"`
	ListAll         []ListAll `json:"listAll,omitempty"`
	Leases          *Stat     `json:"leases,omitempty"`

	// Idle memory of the server with everything loaded, from its /metrics
	// (process_resident_memory_bytes, go_memstats_heap_alloc_bytes); 0 if
	// not measured. For an in-process server both include the client.
	IdleRSS  int64 `json:"idleRssBytes,omitempty"`
	IdleHeap int64 `json:"idleHeapBytes,omitempty"`
	// IdleHeapSys and IdleHeapReleased (go_memstats_heap_sys_bytes,
	// go_memstats_heap_released_bytes) tell heap the Go runtime holds but
	// does not use from heap it has returned to the OS.
	IdleHeapSys      int64 `json:"idleHeapSysBytes,omitempty"`
	IdleHeapReleased int64 `json:"idleHeapReleasedBytes,omitempty"`
	// TypedClient says the measured pod requests went through the typed
	// clientset, answers decoded.
	TypedClient bool `json:"typedClient,omitempty"`
	// PeakRSS is the in-process run's VmHWM (client included); 0 otherwise.
	PeakRSS int64 `json:"peakRssBytes,omitempty"`
}

// Run performs the benchmark described by cfg.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	res := Result{Start: time.Now().UTC(), GoMaxProcs: runtime.GOMAXPROCS(0), Pods: cfg.Pods, Nodes: cfg.Nodes,
		Namespaces: cfg.Namespaces, Apps: cfg.Apps, Workers: cfg.Workers}
	kubeconfig := cfg.Kubeconfig
	if kubeconfig == "" {
		res.InProcess = true
		stop, path, err := startServer(ctx, cfg)
		if err != nil {
			return res, err
		}
		defer stop()
		kubeconfig = path
	}
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return res, fmt.Errorf("apibench: loading kubeconfig %s: %w", kubeconfig, err)
	}
	res.Server = restCfg.Host
	restCfg.QPS = -1 // no client-side rate limit: the server is what is measured
	restCfg.ContentType = protobufType
	restCfg.AcceptContentTypes = protobufType + "," + jsonType
	restCfg.UserAgent = "myriad-bench-api"
	restCfg.Timeout = 5 * time.Minute
	cs, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return res, fmt.Errorf("apibench: client: %w", err)
	}
	b := &bench{cfg: cfg, cs: cs, inProcess: res.InProcess, prefix: runPrefix()}
	if !cfg.TypedClient {
		if b.wire, err = newWireClient(restCfg, cs.CoreV1().RESTClient()); err != nil {
			return res, err
		}
	}
	res.TypedClient = b.wire == nil

	if !cfg.SkipCreate {
		if err := b.profile("create", func() error { res.Create, err = b.creates(ctx); return err }); err != nil {
			return res, err
		}
	}
	if !cfg.SkipReads {
		if err := b.profile("reads", func() error { return b.reads(ctx, &res) }); err != nil {
			return res, err
		}
	}
	if !cfg.SkipListAll {
		if err := b.profile("listall", func() error { res.ListAll, err = b.listAll(ctx); return err }); err != nil {
			return res, err
		}
	}
	if !cfg.SkipLeases {
		if err := b.profile("leases", func() error { res.Leases, err = b.leases(ctx); return err }); err != nil {
			return res, err
		}
	}
	if !cfg.SkipIdle {
		if err := b.idle(ctx, &res); err != nil {
			return res, err
		}
	}
	if res.InProcess {
		if _, peak, err := procstat.ReadMemory(procstat.Self); err == nil {
			res.PeakRSS = peak
		}
	}
	return res, nil
}

// bench is the state the phases share.
type bench struct {
	cfg       Config
	cs        kubernetes.Interface
	wire      *wireClient // nil: measured pod requests go through cs
	inProcess bool
	prefix    string // pod name prefix, unique to this run
	created   bool   // the create phase ran: pod names are known
}

// profile runs phase under a CPU profile of this process written to
// CPUProfileDir, if set.
func (b *bench) profile(phase string, run func() error) error {
	if b.cfg.CPUProfileDir == "" {
		return run()
	}
	if err := os.MkdirAll(b.cfg.CPUProfileDir, 0o755); err != nil {
		return fmt.Errorf("apibench: profile dir: %w", err)
	}
	f, err := os.Create(filepath.Join(b.cfg.CPUProfileDir, phase+".pprof"))
	if err != nil {
		return fmt.Errorf("apibench: profile: %w", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return fmt.Errorf("apibench: profile: %w", err)
	}
	err = run()
	pprof.StopCPUProfile()
	return err
}

// startServer runs an in-process control plane on a free port and returns
// a function stopping it and the path of its admin kubeconfig.
func startServer(ctx context.Context, cfg Config) (stop func(), kubeconfig string, err error) {
	dir := cfg.DataDir
	removeDir := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "myriad-apibench-"); err != nil {
			return nil, "", fmt.Errorf("apibench: data dir: %w", err)
		}
		removeDir = true
	}
	cleanup := func() {
		if removeDir {
			_ = os.RemoveAll(dir)
		}
	}
	port, err := freePort()
	if err != nil {
		cleanup()
		return nil, "", err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cpCfg := controlplane.Config{DataDir: dir, SecurePort: port, Logger: logger, Storage: cfg.Storage, EtcdServers: cfg.EtcdServers}
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(srvCtx, cpCfg, ready) }()
	stop = func() {
		cancel()
		<-done
		cleanup()
	}
	select {
	case <-ready:
		return stop, cpCfg.KubeconfigPath(), nil
	case err := <-done:
		cancel()
		cleanup()
		if err == nil {
			err = errors.New("exited before serving")
		}
		return nil, "", fmt.Errorf("apibench: in-process server: %w", err)
	case <-ctx.Done():
		stop()
		return nil, "", ctx.Err()
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("apibench: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// drain reads r to the end and returns the byte count.
func drain(r io.ReadCloser) (int64, error) {
	defer r.Close()
	return io.Copy(io.Discard, r)
}

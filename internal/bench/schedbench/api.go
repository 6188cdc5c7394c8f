package schedbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/scheduler"
)

// APIConfig configures the end-to-end measurement: pods created through
// the API, scheduled and bound through pods/binding by the scheduler
// running against that API.
type APIConfig struct {
	// Kubeconfig of an existing server; empty starts an in-process control
	// plane (API only) on a temporary directory.
	Kubeconfig string
	// StartScheduler runs scheduler.Run in this process against the server
	// (set false when the server already runs one, e.g. `myriad up`).
	StartScheduler bool
	// Backlog creates every pod before the scheduler starts and times only
	// the binding of the backlog (the scheduler's end-to-end rate);
	// otherwise pods are created while the scheduler runs (the pipeline's
	// rate, usually bounded by pod creation). Needs StartScheduler.
	Backlog     bool
	Nodes, Pods int
	Templates   int
	// Workers create pods concurrently. Default 64.
	Workers int
	// MaxConcurrentBinds is the scheduler's binding pool (0: its default).
	MaxConcurrentBinds int
	Seed               uint64
	Progress           io.Writer
	Logger             *slog.Logger
}

// APIResult is the end-to-end figure.
type APIResult struct {
	Nodes, Pods int
	Workers     int
	InProcess   bool
	Backlog     bool
	// Create is the time to create every pod; Bound the time from the
	// first create (with Backlog: from the scheduler's start) until every
	// pod was seen bound by an informer.
	Create, Bound time.Duration
	CreatePerSec  float64
	BoundPerSec   float64
	// BoundCPU is this process's CPU time (API server, scheduler and
	// bench client together when in-process) from the start of the timed
	// phase until all pods were bound; CPUPerPod divides it by the pods.
	BoundCPU  time.Duration
	CPUPerPod time.Duration
}

// RunAPI runs the end-to-end measurement.
func RunAPI(ctx context.Context, cfg APIConfig) (*APIResult, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if cfg.Templates <= 0 {
		cfg.Templates = 300
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if cfg.Backlog && !cfg.StartScheduler {
		return nil, errors.New("schedbench: a backlog run needs the scheduler started here")
	}
	res := &APIResult{Nodes: cfg.Nodes, Pods: cfg.Pods, Workers: cfg.Workers, InProcess: cfg.Kubeconfig == "", Backlog: cfg.Backlog}
	kubeconfig := cfg.Kubeconfig
	if kubeconfig == "" {
		stop, kc, err := startControlPlane(ctx, cfg.Logger)
		if err != nil {
			return nil, err
		}
		defer stop()
		kubeconfig = kc
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("schedbench: kubeconfig: %w", err)
	}
	rc.QPS, rc.Burst = 10000, 20000
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	const ns = "schedbench"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("schedbench: namespace: %w", err)
	}
	fmt.Fprintf(cfg.Progress, "creating %d nodes\n", cfg.Nodes)
	if err := parallel(ctx, cfg.Workers, Nodes(cfg.Nodes), func(n *v1.Node) error {
		_, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("schedbench: nodes: %w", err)
	}

	schedCtx, stopSched := context.WithCancel(ctx)
	var schedDone chan error
	startScheduler := func() {
		if !cfg.StartScheduler {
			return
		}
		schedDone = make(chan error, 1)
		go func() {
			schedDone <- scheduler.Run(schedCtx, scheduler.Config{RESTConfig: rest.CopyConfig(rc), Logger: cfg.Logger, MaxConcurrentBinds: cfg.MaxConcurrentBinds})
		}()
	}
	defer func() {
		stopSched()
		if schedDone != nil {
			<-schedDone
		}
	}()
	if !cfg.Backlog {
		startScheduler()
	}

	// Count bound pods of our namespace with an informer, as a client would.
	var bound atomic.Int64
	seen := sync.Map{}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	onPod := func(obj any) {
		if p, ok := obj.(*v1.Pod); ok && p.Spec.NodeName != "" {
			if _, loaded := seen.LoadOrStore(p.UID, struct{}{}); !loaded {
				bound.Add(1)
			}
		}
	}
	if _, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, n any) { onPod(n) },
	}); err != nil {
		return nil, err
	}
	infCtx, stopInf := context.WithCancel(ctx)
	defer func() {
		stopInf()
		factory.Shutdown()
	}()
	factory.Start(infCtx.Done())
	factory.WaitForCacheSync(infCtx.Done())

	pods := Pods(cfg.Pods, cfg.Templates, cfg.Seed)
	for _, p := range pods {
		p.Namespace = ns
		p.UID = ""
	}
	stopProgress := benchutil.ReportProgress(cfg.Progress, "bound", cfg.Pods, &bound)
	defer stopProgress()
	start := time.Now()
	createCPU0 := processCPU()
	if err := parallel(ctx, cfg.Workers, pods, func(p *v1.Pod) error {
		_, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("schedbench: pods: %w", err)
	}
	res.Create = time.Since(start)
	cpu0 := processCPU()
	if cfg.Backlog {
		start = time.Now()
		startScheduler()
	} else {
		cpu0 = createCPU0
	}
	deadline := time.Now().Add(10 * time.Minute)
	for bound.Load() < int64(cfg.Pods) {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("schedbench: only %d of %d pods bound after 10 minutes", bound.Load(), cfg.Pods)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	res.Bound = time.Since(start)
	res.BoundCPU = processCPU() - cpu0
	res.CPUPerPod = res.BoundCPU / time.Duration(cfg.Pods)
	res.CreatePerSec = float64(cfg.Pods) / res.Create.Seconds()
	res.BoundPerSec = float64(cfg.Pods) / res.Bound.Seconds()
	return res, nil
}

// Write prints the end-to-end result.
func (r *APIResult) Write(w io.Writer) error {
	where := "external server"
	if r.InProcess {
		where = "in-process API server (API only) + in-process scheduler, both over loopback HTTPS"
	}
	if r.Backlog {
		where += "; backlog: all pods created first, bound/s timed from the scheduler's start"
	} else {
		where += "; pods created while the scheduler runs, bound/s timed from the first create"
	}
	_, err := fmt.Fprintf(w, "# myriad bench scheduler --through-api\n\n%s; %d nodes, %d pods, %d create workers\n\n"+
		"| pods | created in | create/s | all bound after | bound/s | process CPU in that time | CPU per pod |\n|---:|---:|---:|---:|---:|---:|---:|\n| %d | %s | %.0f | %s | %.0f | %s | %s |\n",
		where, r.Nodes, r.Pods, r.Workers, r.Pods, r.Create.Round(time.Millisecond), r.CreatePerSec, r.Bound.Round(time.Millisecond), r.BoundPerSec,
		r.BoundCPU.Round(time.Millisecond), r.CPUPerPod.Round(time.Microsecond))
	return err
}

// parallel runs fn over items with n workers, stopping at the first error.
func parallel[T any](ctx context.Context, n int, items []T, fn func(T) error) error {
	ch := make(chan T)
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				if err := fn(it); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, it := range items {
		select {
		case ch <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if first == nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return first
}

// startControlPlane runs the API server in-process on a temporary
// directory and a free port.
func startControlPlane(ctx context.Context, log *slog.Logger) (stop func(), kubeconfig string, err error) {
	dir, err := os.MkdirTemp("", "myriad-schedbench-")
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cpCfg := controlplane.Config{DataDir: dir, SecurePort: port, Logger: log}
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- controlplane.Run(srvCtx, cpCfg, ready) }()
	stop = func() {
		cancel()
		<-done
		os.RemoveAll(dir)
	}
	select {
	case <-ready:
		return stop, cpCfg.KubeconfigPath(), nil
	case err := <-done:
		cancel()
		os.RemoveAll(dir)
		if err == nil {
			err = errors.New("exited before serving")
		}
		return nil, "", fmt.Errorf("schedbench: in-process server: %w", err)
	}
}

package restartbench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/controlplane"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
	"github.com/myriad-k8s/myriad/internal/storage/etcd"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/procstat"
)

// Config says what to load and where.
type Config struct {
	// Dir is the control plane's data directory (required; the store goes
	// to Dir/store as `myriad up` keeps it).
	Dir string
	// Pods written before the restart (default 1,000,000); 0 with
	// SkipLoad reuses what Dir holds.
	Pods     int
	SkipLoad bool
	// Namespaces and Nodes the pods spread over (defaults 1,000 and 10,000).
	Namespaces, Nodes int
	// Writers load the store concurrently (default 64).
	Writers  int
	Progress io.Writer
	// Storage "etcd" loads into and starts on the etcd at EtcdServers
	// (with `myriad apiserver --storage=etcd`'s key layout) instead of
	// the embedded store in Dir.
	Storage     string
	EtcdServers []string
}

// Result is what one restart cost.
type Result struct {
	Pods         int
	LoadTime     time.Duration
	StoreBytes   int64
	ReadyTime    time.Duration // start of controlplane.Run until serving
	HeapAfterGC  uint64        // live heap once ready, after a GC
	RSSWhenReady uint64        // process RSS once ready (this process: loader + server)
	GoMaxProcs   int
}

func (c Config) withDefaults() Config {
	if c.Pods == 0 && !c.SkipLoad {
		c.Pods = 1_000_000
	}
	if c.Namespaces == 0 {
		c.Namespaces = 1000
	}
	if c.Nodes == 0 {
		c.Nodes = 10000
	}
	if c.Writers == 0 {
		c.Writers = 64
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

// Run loads the store (unless SkipLoad) and measures one start.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if cfg.Dir == "" {
		return Result{}, fmt.Errorf("restartbench: Config.Dir is required")
	}
	res := Result{Pods: cfg.Pods, GoMaxProcs: runtime.GOMAXPROCS(0)}
	var err error
	if !cfg.SkipLoad {
		start := time.Now()
		if err := load(ctx, cfg); err != nil {
			return res, err
		}
		res.LoadTime = time.Since(start)
	}
	if cfg.Storage == "etcd" {
		if res.StoreBytes, err = etcdSize(ctx, cfg); err != nil {
			return res, err
		}
	} else {
		res.StoreBytes, _ = benchutil.DirSize(filepath.Join(cfg.Dir, "store"))
	}
	runtime.GC()

	port, err := freePort()
	if err != nil {
		return res, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ready := make(chan struct{})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- controlplane.Run(runCtx, controlplane.Config{
			DataDir: cfg.Dir, SecurePort: port, Storage: cfg.Storage, EtcdServers: cfg.EtcdServers,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}, ready)
	}()
	select {
	case <-ready:
		res.ReadyTime = time.Since(start)
	case err := <-done:
		return res, fmt.Errorf("control plane exited before ready: %w", err)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	if rss, _, err := procstat.ReadMemory(procstat.Self); err == nil {
		res.RSSWhenReady = uint64(rss)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapAfterGC = ms.HeapAlloc
	stop()
	if err := <-done; err != nil {
		return res, err
	}
	return res, nil
}

// load writes the pods with the API server's key layout and encoding.
func load(ctx context.Context, cfg Config) error {
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	scheme, err := registry.NewScheme()
	if err != nil {
		return err
	}
	codec := protobuf.NewSerializer(scheme, scheme)
	var next, written atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Writers)
	for w := 0; w < cfg.Writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf bytes.Buffer
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.Pods || ctx.Err() != nil {
					return
				}
				pod := benchutil.StoredPod(i, nsName(i%cfg.Namespaces), cfg.Nodes)
				buf.Reset()
				if err := codec.Encode(pod, &buf); err != nil {
					errs <- err
					return
				}
				key := "/core/pods/" + pod.Namespace + "/" + pod.Name
				if _, err := st.Create(ctx, key, append([]byte(nil), buf.Bytes()...)); err != nil {
					errs <- fmt.Errorf("writing %s: %w", key, err)
					return
				}
				if n := written.Add(1); n%100000 == 0 {
					fmt.Fprintf(cfg.Progress, "loaded %d/%d pods\n", n, cfg.Pods)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	// Namespaces, so the pods are reachable as they would be.
	for i := 0; i < cfg.Namespaces; i++ {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: nsName(i), UID: types.UID(fmt.Sprintf("ns-%d", i))},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}
		buf := &bytes.Buffer{}
		if err := codec.Encode(ns, buf); err != nil {
			return err
		}
		if _, err := st.Create(ctx, "/core/namespaces/"+ns.Name, buf.Bytes()); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func nsName(i int) string { return "restart-" + strconv.Itoa(i) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Write prints r as a markdown table.
func (r Result) Write(w io.Writer) error {
	pods := strconv.Itoa(r.Pods)
	if r.Pods == 0 {
		pods = "existing"
	}
	_, err := fmt.Fprintf(w, "| pods | load | store on disk | start → serving (all caches synced) | RSS when ready | live heap after GC | GOMAXPROCS |\n|---:|---:|---:|---:|---:|---:|---:|\n| %s | %v | %.0f MiB | %v | %.0f MiB | %.0f MiB | %d |\n",
		pods, r.LoadTime.Round(time.Millisecond), float64(r.StoreBytes)/(1<<20), r.ReadyTime.Round(time.Millisecond),
		float64(r.RSSWhenReady)/(1<<20), float64(r.HeapAfterGC)/(1<<20), r.GoMaxProcs)
	return err
}

// openStore opens the store the server will start on.
func openStore(ctx context.Context, cfg Config) (storage.Store, error) {
	if cfg.Storage != "etcd" {
		return embedded.Open(ctx, embedded.Options{Dir: filepath.Join(cfg.Dir, "store")})
	}
	layout, err := controlplane.EtcdKeyLayout()
	if err != nil {
		return nil, err
	}
	return etcd.New(ctx, etcd.Config{Endpoints: cfg.EtcdServers, KeyLayout: layout})
}

// etcdSize is the etcd database's size, the StoreBytes of an etcd run.
func etcdSize(ctx context.Context, cfg Config) (int64, error) {
	st, err := etcd.New(ctx, etcd.Config{Endpoints: cfg.EtcdServers})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	return st.DBSize(ctx)
}

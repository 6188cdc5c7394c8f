package scenarios

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// KubeletPath is the `kubelet-path` scenario: hollow nodes that serve the
// kubelet API, one pod on each, then `kubectl logs` through the API server
// at a fixed rate (the figure: its latency), then Streams exec sessions
// held open at once (the figure: the server heap and RSS each costs).
type KubeletPath struct {
	// Nodes is the number of hollow nodes, one pod each. Default 1,000.
	Nodes int
	// Rate of pods/log requests per second. Default 50.
	Rate float64
	// Duration of the logs phase. Default 30 s.
	Duration time.Duration
	// Streams is the number of exec sessions held open together.
	// Default 200.
	Streams int
}

func (c *KubeletPath) defaults() {
	if c.Nodes <= 0 {
		c.Nodes = 1000
	}
	if c.Rate <= 0 {
		c.Rate = 50
	}
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.Streams <= 0 {
		c.Streams = 200
	}
}

// logsKey is the key pods/log calls are recorded under.
var logsKey = key("GET", "pods/log", "resource")

// Run implements loadtest.Scenario.
func (c KubeletPath) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["rate"] = ftoa(c.Rate)
	r.Params["duration"] = c.Duration.String()
	r.Params["streams"] = itoa(c.Streams)
	env.SLOs = true

	prefix := "bench-kubelet-" + runID()
	nodes, err := hollowNodesWith(ctx, env, prefix+"-node-", c.Nodes, func(c *sim.Config) { c.Kubelet.Enabled = true })
	if err != nil {
		return err
	}
	names := nodes.NodeNames()
	defer deleteNodes(ctx, env, names)
	defer nodes.Stop()
	namespaces, err := createNamespaces(ctx, env.Client, prefix, 1)
	if err != nil {
		return err
	}
	ns := namespaces[0]
	defer cleanupNamespaces(ctx, env, namespaces)

	env.Progress.Phase("create pods", int64(len(names)), time.Time{}, nil)
	if err := prefill(ctx, env, len(names), func(ctx context.Context, i int) error {
		_, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p-%d", i), names[i]), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if err := waitRunning(ctx, env, ns, len(names)); err != nil {
		return err
	}

	// kubectl logs --tail=10: each call crosses the API server to the
	// pod's hollow kubelet and back.
	env.Progress.Phase("logs", int64(c.Rate*c.Duration.Seconds()), time.Time{}, nil)
	deadline := time.Now().Add(c.Duration)
	tail := int64(10)
	started, dropped := pace(ctx, c.Rate, 16, deadline, 0, func(ctx context.Context, _ int, i int64) {
		name := fmt.Sprintf("p-%d", i%int64(len(names)))
		t := time.Now()
		_, err := env.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		env.Latency.Observe(logsKey, time.Since(t), err)
		env.Progress.Add(1)
	})
	r.AddFigure("logs_started", "pods/log calls made", float64(started), "")
	r.AddFigure("logs_dropped", "pods/log calls dropped (every worker busy)", float64(dropped), "")

	return c.execStreams(ctx, env, ns, len(names))
}

// execStreams opens c.Streams exec sessions (WebSocket, as kubectl ≥ 1.31),
// keeps them open with stdin idle, and records the server's heap and RSS
// growth per session.
func (c KubeletPath) execStreams(ctx context.Context, env *loadtest.Env, ns string, pods int) error {
	r := env.Result
	before, err := settledScrape(ctx, env)
	if err != nil {
		return err
	}
	env.Progress.Phase("exec streams", int64(c.Streams), time.Time{}, nil)
	streamCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var mu sync.Mutex
	var failed int
	var firstErr error
	open := make(chan struct{}, c.Streams)
	for i := range c.Streams {
		req := env.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).
			Name(fmt.Sprintf("p-%d", i%pods)).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "app", Command: []string{"cat"}, Stdin: true, Stdout: true}, scheme.ParameterCodec)
		exec, err := remotecommand.NewWebSocketExecutor(env.RESTConfig, "GET", req.URL().String())
		if err != nil {
			return fmt.Errorf("exec: %w", err)
		}
		stdin, stdinW := io.Pipe()
		// Each session signals open exactly once: on its first byte back,
		// or on failing first.
		signal := &signalWriter{once: &sync.Once{}, ch: open}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer stdinW.Close()
			err := exec.StreamWithContext(streamCtx, remotecommand.StreamOptions{Stdin: stdin, Stdout: signal})
			if err != nil && streamCtx.Err() == nil {
				mu.Lock()
				failed++
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
			signal.signal()
		}()
		// Say something so the hollow kubelet echoes it: the stream is
		// known to be open end to end once the first byte comes back.
		go func() { _, _ = stdinW.Write([]byte("hello\n")) }()
	}
	for range c.Streams {
		select {
		case <-open:
			env.Progress.Add(1)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	during, err := settledScrape(ctx, env)
	if err != nil {
		return err
	}
	stop()
	mu.Lock()
	r.AddFigure("exec_failed", "exec sessions that failed to open", float64(failed), "")
	if firstErr != nil {
		env.Log.Warn("exec", "err", firstErr)
	}
	mu.Unlock()
	n := float64(c.Streams - failed)
	if n > 0 {
		r.AddFigure("exec_heap_per_stream", "server heap in use per open exec session", (during.HeapInuseBytes-before.HeapInuseBytes)/n/1024, "KiB")
		r.AddFigure("exec_rss_per_stream", "server RSS per open exec session", (during.RSSBytes-before.RSSBytes)/n/1024, "KiB")
	}
	r.AddVerdict("every exec session opened", "0 failed", itoa(failed), failed == 0)
	return nil
}

// settledScrape scrapes the server's metrics after letting its garbage
// collector catch up, so heap figures compare live memory.
func settledScrape(ctx context.Context, env *loadtest.Env) (loadtest.Scrape, error) {
	runtime.GC() // the bench's own process, so its clients' garbage goes too
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return loadtest.Scrape{}, ctx.Err()
	}
	s, err := env.Metrics.Scrape(ctx)
	if err != nil {
		return s, fmt.Errorf("scraping the server's metrics: %w", err)
	}
	return s, nil
}

// signalWriter signals ch on its first write and discards everything.
type signalWriter struct {
	once *sync.Once
	ch   chan<- struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.signal()
	return len(p), nil
}

func (w *signalWriter) signal() { w.once.Do(func() { w.ch <- struct{}{} }) }

// waitRunning waits until n pods in ns are Running.
func waitRunning(ctx context.Context, env *loadtest.Env, ns string, n int) error {
	env.Progress.Phase("pods running", int64(n), time.Time{}, nil)
	last := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running", ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		env.Progress.Add(int64(len(list.Items) - last))
		last = len(list.Items)
		return last >= n, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d pods to run (%d running): %w", n, last, err)
	}
	return nil
}

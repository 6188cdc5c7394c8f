package scenarios

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// Churn is the `churn` scenario (the Ant seed's serverless pods): short
// lived pods bound to hollow nodes (spec.nodeName set, so no scheduler is
// needed) created at a fixed rate, each deleted (gracefully, as a user
// would) Lifetime after its creation. It measures create and delete call
// latency, created → Running (as the bench's watch sees it) and delete →
// gone.
type Churn struct {
	// Nodes is the number of hollow nodes the pods run on. Default 20.
	Nodes int
	// Rate of pod creations per second. Default 20.
	Rate float64
	// Lifetime of each pod from its creation to its delete call.
	// Default 5 s.
	Lifetime time.Duration
	// Duration of the creating phase. Default 20 s.
	Duration time.Duration
	// MaxPods bounds the pods created (0: Rate × Duration).
	MaxPods int64
}

func (c *Churn) defaults() {
	if c.Nodes <= 0 {
		c.Nodes = 20
	}
	if c.Rate <= 0 {
		c.Rate = 20
	}
	if c.Lifetime <= 0 {
		c.Lifetime = 5 * time.Second
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
}

// Run implements loadtest.Scenario.
func (c Churn) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	maxPods := c.MaxPods
	if maxPods <= 0 {
		maxPods = int64(c.Rate * c.Duration.Seconds())
	}
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["rate"] = ftoa(c.Rate)
	r.Params["lifetime"] = c.Lifetime.String()
	r.Params["duration"] = c.Duration.String()
	r.Params["max-pods"] = fmt.Sprint(maxPods)
	env.SLOs = true

	id := runID()
	prefix := "bench-churn-" + id
	nodes, err := hollowNodes(ctx, env, prefix+"-node-", c.Nodes, false)
	if err != nil {
		return err
	}
	defer deleteNodes(ctx, env, nodes.NodeNames())
	defer nodes.Stop()
	namespaces, err := createNamespaces(ctx, env.Client, prefix, 1)
	if err != nil {
		return err
	}
	defer cleanupNamespaces(ctx, env, namespaces)
	ns := namespaces[0]
	tracker := newPodTracker(env.Client, ns, "", env.Start)
	if err := tracker.run(ctx); err != nil {
		return err
	}
	defer tracker.close()

	names := nodes.NodeNames()
	pods := env.Client.CoreV1().Pods(ns)
	var mu sync.Mutex
	createSent := map[string]time.Time{}
	deleteSent := map[string]time.Time{}
	var deletes sync.WaitGroup
	var created, createFailed atomic.Int64
	before, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	deadline := time.Now().Add(c.Duration)
	env.Progress.Phase("churn", maxPods, deadline, func() string {
		seen, _, running, deleted := tracker.counts()
		return fmt.Sprintf("seen %d, ran %d, gone %d", seen, running, deleted)
	})
	started, dropped := pace(ctx, c.Rate, 16, deadline, maxPods, func(ctx context.Context, _ int, i int64) {
		name := fmt.Sprintf("churn-%d", i)
		t0 := time.Now()
		err := env.Latency.Time(key("POST", "pods", "resource"), func() error {
			_, err := pods.Create(ctx, pod(name, names[int(i)%len(names)]), metav1.CreateOptions{})
			return err
		})
		env.Progress.Add(1)
		if err != nil {
			createFailed.Add(1)
			return
		}
		created.Add(1)
		mu.Lock()
		createSent[name] = t0
		mu.Unlock()
		deletes.Add(1)
		time.AfterFunc(time.Until(t0.Add(c.Lifetime)), func() {
			defer deletes.Done()
			mu.Lock()
			deleteSent[name] = time.Now()
			mu.Unlock()
			// Graceful, as a user's delete: the hollow node confirms it.
			_ = env.Latency.Time(key("DELETE", "pods", "resource"), func() error {
				return pods.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
			})
		})
	})
	deletes.Wait()
	// Wait (bounded) until every pod has run and is gone.
	n := int(created.Load())
	env.Progress.Phase("drain", int64(n), time.Now().Add(60*time.Second), func() string {
		_, _, running, deleted := tracker.counts()
		return fmt.Sprintf("ran %d, gone %d", running, deleted)
	})
	drainUntil := time.Now().Add(60 * time.Second)
	for time.Now().Before(drainUntil) && ctx.Err() == nil {
		if _, _, running, deleted := tracker.counts(); running >= n && deleted >= n {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	after, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	tracker.close()

	runLat := loadtest.NewRecorder(env.Start)
	goneLat := loadtest.NewRecorder(env.Start)
	var neverRan, neverGone int
	mu.Lock()
	for name, sent := range createSent {
		pt, ok := tracker.times(ns, name)
		if !ok || pt.runningSeen.IsZero() {
			neverRan++
		} else {
			runLat.ObserveAt(key("RUNNING", "pods", "resource"), pt.runningSeen, pt.runningSeen.Sub(sent))
		}
		if !ok || pt.deletedSeen.IsZero() {
			neverGone++
		} else if ds, ok := deleteSent[name]; ok {
			goneLat.ObserveAt(key("GONE", "pods", "resource"), pt.deletedSeen, pt.deletedSeen.Sub(ds))
		}
	}
	mu.Unlock()
	run, gone := firstStat(runLat), firstStat(goneLat)
	r.Latencies = append(r.Latencies, run, gone)
	r.Series = append(r.Series, tracker.series()...)
	r.Series = append(r.Series, runLat.PercentileSeries(time.Second, "create to running")...)
	env.Plots = append(env.Plots,
		loadtest.PlotSpec{File: "pods.svg", Title: "Pods over time (as the bench's watch saw them)", YLabel: "pods",
			Series: []string{"pods created", "pods running", "pods deleted"}},
		loadtest.PlotSpec{File: "running-latency.svg", Title: "Create sent → watched Running", YLabel: "ms",
			Series: []string{"create to running p50", "create to running p99"}})

	secs := c.Duration.Seconds()
	r.AddFigure("pods_created", "pods created", float64(created.Load()), "")
	r.AddFigure("create_failures", "pod creates that failed", float64(createFailed.Load()), "")
	r.AddFigure("creates_per_second", "achieved create rate", float64(started)/secs, "pods/s")
	r.AddFigure("dropped_ticks", "creates skipped because every worker was busy", float64(dropped), "")
	r.AddFigure("running_p50", "create → Running p50", run.P50.D().Seconds(), "s")
	r.AddFigure("running_p99", "create → Running p99", run.P99.D().Seconds(), "s")
	r.AddFigure("gone_p50", "delete → gone p50", gone.P50.D().Seconds(), "s")
	r.AddFigure("gone_p99", "delete → gone p99", gone.P99.D().Seconds(), "s")
	r.AddFigure("never_ran", "pods never seen Running", float64(neverRan), "")
	r.AddFigure("never_gone", "pods never seen deleted", float64(neverGone), "")
	serverCreates := after.Since(before).Sum(func(k loadtest.RequestKey) bool {
		return k.Verb == "POST" && k.Resource == "pods" && k.Subresource == ""
	})
	benchCreates := created.Load() + createFailed.Load()
	r.AddFigure("server_pod_creates", "pod creates the server counted", serverCreates, "")
	r.AddVerdict("server counted the bench's pod creates", fmt.Sprint(benchCreates), fmt.Sprint(serverCreates), float64(benchCreates) == serverCreates)
	r.AddVerdict("every pod ran", fmt.Sprint(n), fmt.Sprint(n-neverRan), neverRan == 0)
	r.AddVerdict("every pod was deleted", fmt.Sprint(n), fmt.Sprint(n-neverGone), neverGone == 0)
	return nil
}

// firstStat is the only stat of a one-key recorder (zero if empty).
func firstStat(r *loadtest.Recorder) loadtest.LatencyStat {
	st := r.Stats(false)
	if len(st) == 0 {
		return loadtest.LatencyStat{}
	}
	return st[0]
}

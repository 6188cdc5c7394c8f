package scenarios

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
	"github.com/myriad-k8s/myriad/internal/procstat"
	"github.com/myriad-k8s/myriad/internal/sim"
)

// Density is the `density` scenario (the CoreOS seed's density test,
// clusterloader2's pod-startup SLI): PodsPerNode pods per node, created
// through Deployments of PodsPerDeployment replicas, on Nodes hollow
// nodes (or the nodes already there). It needs a scheduler and the
// Deployment and ReplicaSet controllers. It measures pods created,
// scheduled and running over time, and each pod's startup: created →
// scheduled → running → watched as running.
type Density struct {
	// Nodes is the number of hollow nodes to start. Default 100.
	Nodes int
	// ExistingNodes uses the cluster's Ready nodes instead of starting
	// hollow ones; Nodes is then the count found.
	ExistingNodes bool
	// PodsPerNode. Default 30 (CoreOS).
	PodsPerNode int
	// PodsPerDeployment is each Deployment's replica count. Default 30.
	PodsPerDeployment int
	// Timeout for every pod to be running. Default 10 min.
	Timeout time.Duration
}

func (c *Density) defaults() error {
	if c.Nodes <= 0 {
		c.Nodes = 100
	}
	if c.PodsPerNode <= 0 {
		c.PodsPerNode = 30
	}
	if c.PodsPerDeployment <= 0 {
		c.PodsPerDeployment = 30
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if !c.ExistingNodes && c.PodsPerNode > 100 {
		return fmt.Errorf("density: at most 100 pods per hollow node (they hold 110, some room is kept), got %d", c.PodsPerNode)
	}
	return nil
}

// podStartupSLO is upstream's pod startup SLO: p99 of created →
// watched running, images pre-pulled, ≤ 5 s.
const podStartupSLO = 5 * time.Second

// Run implements loadtest.Scenario.
func (c Density) Run(ctx context.Context, env *loadtest.Env) error {
	if err := c.defaults(); err != nil {
		return err
	}
	r := env.Result
	id := runID()
	prefix := "bench-density-" + id
	// atNode times each pod's steps at its hollow node on this process's
	// clock; hollow is nil with ExistingNodes.
	atNode := newNodeSteps()
	var hollow *sim.Sim
	if c.ExistingNodes {
		nodes, err := env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing nodes: %w", err)
		}
		c.Nodes = len(nodes.Items)
		if c.Nodes == 0 {
			return fmt.Errorf("density --existing-nodes: the cluster has no nodes")
		}
	} else {
		var err error
		hollow, err = hollowNodesWith(ctx, env, prefix+"-node-", c.Nodes, func(cfg *sim.Config) { cfg.PodObserver = atNode.observe })
		if err != nil {
			return err
		}
		defer deleteNodes(ctx, env, hollow.NodeNames())
		defer hollow.Stop()
	}
	total := c.Nodes * c.PodsPerNode
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["existing-nodes"] = fmt.Sprint(c.ExistingNodes)
	r.Params["pods-per-node"] = itoa(c.PodsPerNode)
	r.Params["pods-per-deployment"] = itoa(c.PodsPerDeployment)
	r.Params["timeout"] = c.Timeout.String()
	env.SLOs = true

	namespaces, err := createNamespaces(ctx, env.Client, prefix, 1)
	if err != nil {
		return err
	}
	ns := namespaces[0]
	defer cleanupNamespaces(ctx, env, namespaces)
	tracker := newPodTracker(env.Client, ns, "", env.Start)
	if err := tracker.run(ctx); err != nil {
		return err
	}
	defer tracker.close()

	// Create the Deployments, a few at a time: creating objects is the
	// cheap part; what is measured is how fast the control plane turns
	// them into running pods.
	var deployments []*appsv1.Deployment
	for left, i := total, 0; left > 0; i++ {
		n := min(left, c.PodsPerDeployment)
		deployments = append(deployments, deployment(fmt.Sprintf("density-%d", i), int32(n)))
		left -= n
	}
	// CPU from the first Deployment to the last pod running, the server's
	// and this process's: the whole run's figure also holds node
	// registration and the cleanup.
	cpuBefore, cpuErr := env.Monitor.Mark(ctx)
	benchBefore, benchErr := procstat.ReadCPU(procstat.Self)
	start := time.Now()
	deadline := start.Add(c.Timeout)
	startT := env.Elapsed()
	env.Progress.Phase("create deployments", int64(len(deployments)), deadline, nil)
	var createErr atomic.Pointer[error]
	pace(ctx, 1e6, 8, deadline, int64(len(deployments)), func(ctx context.Context, _ int, i int64) {
		err := env.Latency.Time(key("POST", "deployments", "resource"), func() error {
			_, err := env.Client.AppsV1().Deployments(ns).Create(ctx, deployments[i], metav1.CreateOptions{})
			return err
		})
		if err != nil {
			createErr.CompareAndSwap(nil, &err)
		}
		env.Progress.Add(1)
	})
	if err := createErr.Load(); err != nil {
		return fmt.Errorf("creating deployments: %w", *err)
	}
	createdAt := time.Now()

	env.Progress.Phase("pods", int64(total), deadline, func() string {
		seen, scheduled, running, _ := tracker.counts()
		return fmt.Sprintf("created %d, scheduled %d, running %d", seen, scheduled, running)
	})
	last := 0
	for time.Now().Before(deadline) && ctx.Err() == nil {
		_, _, running, _ := tracker.counts()
		env.Progress.Add(int64(running - last))
		last = running
		if running >= total {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	allRunning := time.Now()
	endT := env.Elapsed()
	benchAfter, benchErr2 := procstat.ReadCPU(procstat.Self)
	cpuAfter, cpuErr2 := env.Monitor.Mark(ctx)
	seen, scheduled, running, _ := tracker.counts()

	// The server's own count: a consistent LIST of the namespace.
	list, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	listedRunning := 0
	for i := range list.Items {
		if podRunning(&list.Items[i]) {
			listedRunning++
		}
	}
	tracker.close()

	steps := map[string]*loadtest.Recorder{}
	rec := func(name string) *loadtest.Recorder {
		if steps[name] == nil {
			steps[name] = loadtest.NewRecorder(env.Start)
		}
		return steps[name]
	}
	for _, pt := range tracker.all() {
		if pt.runningSeen.IsZero() {
			continue
		}
		// clusterloader2's SLI: creationTimestamp (whole seconds, so up to
		// 1 s early) to the watch seeing Running.
		rec("startup").ObserveAt(stepKey("startup"), pt.runningSeen, nonNeg(pt.runningSeen.Sub(pt.created)))
		rec("watch").ObserveAt(stepKey("watch"), pt.runningSeen, nonNeg(pt.runningSeen.Sub(pt.firstSeen)))
		if !pt.scheduledSeen.IsZero() {
			rec("sched").ObserveAt(stepKey("sched"), pt.scheduledSeen, nonNeg(pt.scheduledSeen.Sub(pt.firstSeen)))
			rec("run").ObserveAt(stepKey("run"), pt.runningSeen, nonNeg(pt.runningSeen.Sub(pt.scheduledSeen)))
		}
		if admitted, written := atNode.get(pt.key); !admitted.IsZero() && !written.IsZero() {
			if !pt.scheduledSeen.IsZero() {
				rec("node-admit").ObserveAt(stepKey("node-admit"), pt.runningSeen, nonNeg(admitted.Sub(pt.scheduledSeen)))
			}
			rec("node-start").ObserveAt(stepKey("node-start"), pt.runningSeen, nonNeg(written.Sub(admitted)))
			rec("node-watch").ObserveAt(stepKey("node-watch"), pt.runningSeen, nonNeg(pt.runningSeen.Sub(written)))
		}
		if !pt.scheduledCond.IsZero() && !pt.runningStatus.IsZero() {
			rec("status-sched").ObserveAt(stepKey("status-sched"), pt.runningSeen, nonNeg(pt.scheduledCond.Sub(pt.created)))
			rec("status-run").ObserveAt(stepKey("status-run"), pt.runningSeen, nonNeg(pt.runningStatus.Sub(pt.scheduledCond)))
			rec("status-watch").ObserveAt(stepKey("status-watch"), pt.runningSeen, nonNeg(pt.runningSeen.Sub(pt.runningStatus)))
		}
	}
	stat := func(name string) loadtest.LatencyStat {
		if steps[name] == nil {
			return loadtest.LatencyStat{Key: stepKey(name)}
		}
		return firstStat(steps[name])
	}
	for _, n := range []string{"startup", "watch", "sched", "run", "node-admit", "node-start", "node-watch", "status-sched", "status-run", "status-watch"} {
		r.Latencies = append(r.Latencies, stat(n))
	}
	startup := stat("startup")
	r.Series = append(r.Series, tracker.series()...)
	if steps["startup"] != nil {
		r.Series = append(r.Series, steps["startup"].PercentileSeries(time.Second, "pod startup")...)
	}
	env.Plots = append(env.Plots,
		loadtest.PlotSpec{File: "pods.svg", Title: "Pods created, scheduled and running over time", YLabel: "pods",
			Series: []string{"pods created", "pods scheduled", "pods running"}},
		loadtest.PlotSpec{File: "startup.svg", Title: "Pod startup latency (created → watched running), by time running", YLabel: "ms",
			Series: []string{"pod startup p50", "pod startup p99"}})

	took := allRunning.Sub(start).Seconds()
	r.AddFigure("pods", "pods asked for (nodes × pods per node)", float64(total), "")
	r.AddFigure("deployments", "Deployments", float64(len(deployments)), "")
	r.AddFigure("deployments_created_seconds", "time to create the Deployments", createdAt.Sub(start).Seconds(), "s")
	r.AddFigure("pods_created", "pods created (seen by the watch)", float64(seen), "")
	r.AddFigure("pods_scheduled", "pods scheduled", float64(scheduled), "")
	r.AddFigure("pods_running", "pods running", float64(running), "")
	r.AddFigure("pods_listed", "pods the server lists in the namespace", float64(len(list.Items)), "")
	r.AddFigure("pods_listed_running", "of them Running", float64(listedRunning), "")
	r.AddFigure("all_running_seconds", "first Deployment created → last pod running", took, "s")
	r.AddFigure("running_per_second", "pods running per second (overall)", float64(running)/took, "pods/s")
	r.AddFigure("created_per_second_peak", "peak pods created per second", peakRate(tracker.series(), "pods created", startT, endT), "pods/s")
	r.AddFigure("running_per_second_peak", "peak pods running per second", peakRate(tracker.series(), "pods running", startT, endT), "pods/s")
	r.AddFigure("startup_p50", "pod startup p50", startup.P50.D().Seconds(), "s")
	r.AddFigure("startup_p90", "pod startup p90", startup.P90.D().Seconds(), "s")
	r.AddFigure("startup_p99", "pod startup p99", startup.P99.D().Seconds(), "s")
	if cpuErr == nil && cpuErr2 == nil && running > 0 {
		cpu := cpuAfter.CPUSeconds - cpuBefore.CPUSeconds
		r.AddFigure("server_cpu_pods_seconds", "server CPU, first Deployment → last pod running", cpu, "s")
		r.AddFigure("server_cpu_per_pod_ms", "of it per pod running", 1000*cpu/float64(running), "ms")
		writes := cpuAfter.Since(cpuBefore).Sum(func(k loadtest.RequestKey) bool { return loadtest.IsMutating(k.Verb) })
		r.AddFigure("server_writes_per_pod", "server writes per pod running, same span", writes/float64(running), "")
	}
	if benchErr == nil && benchErr2 == nil {
		r.AddFigure("bench_cpu_pods_seconds", "bench process CPU (hollow nodes, watchers), first Deployment → last pod running", (benchAfter - benchBefore).Seconds(), "s")
	}
	if hollow != nil {
		addNodeFigures(r, hollow.Stats())
	}
	r.AddVerdict("every pod running", fmt.Sprintf("%d within %s", total, c.Timeout), fmt.Sprint(running), running >= total)
	r.AddVerdict("the server lists exactly the pods asked for", fmt.Sprint(total), fmt.Sprint(len(list.Items)), len(list.Items) == total)
	r.AddVerdict("pod startup p99 (upstream SLO)", "≤ "+podStartupSLO.String(), startup.P99.D().Round(time.Millisecond).String(),
		startup.Count > 0 && startup.P99.D() <= podStartupSLO)
	r.Notes = append(r.Notes,
		"startup = creationTimestamp → the bench's watch sees Running (clusterloader2's pod-startup SLI); creationTimestamp has whole-second precision, so it can read up to 1 s long.",
		"watch steps (sub-millisecond, the bench's clock): first seen → seen with spec.nodeName (sched) → seen Running (run); watch = first seen → seen Running.",
		"node steps (this process's clock; hollow nodes only): seen bound → the node admits the pod (node-admit, its watch) → the server acknowledges its Running status (node-start: the startup delay, waiting for a pod worker, the write) → seen Running (node-watch).",
		"status steps (whole seconds, server and node clocks): creationTimestamp → PodScheduled condition (status-sched) → container startedAt (status-run) → watched Running (status-watch).",
		"hollow nodes start a pod 1 s after admitting it (sim PodStartupDelay): that second is in every startup figure.")
	return nil
}

// addNodeFigures adds the hollow nodes' pod work figures: whether pods
// waited for a free pod worker, and how long the server took to answer
// their status writes.
func addNodeFigures(r *loadtest.Result, st sim.Stats) {
	r.AddFigure("node_pod_dispatch_p99", "hollow nodes: pod work due → a worker takes it, p99", st.PodDispatch.Quantile(0.99).Seconds(), "s")
	r.AddFigure("node_pod_saturated", "hollow nodes: pod work that found every worker busy", float64(st.PodSaturated), "")
	r.AddFigure("node_pod_workers_max_busy", fmt.Sprintf("hollow nodes: most pod workers busy at once (of %d)", st.PodWorkers), float64(st.PodMaxBusy), "")
	r.AddFigure("node_pod_write_p50", "hollow nodes: pod status write, p50", st.PodWrite.Quantile(0.5).Seconds(), "s")
	r.AddFigure("node_pod_write_p99", "hollow nodes: pod status write, p99", st.PodWrite.Quantile(0.99).Seconds(), "s")
}

// nodeSteps records when hollow nodes admitted each pod and when its
// Running status was acknowledged (sim.Config.PodObserver), keyed by
// namespace/name, on the clock the pod tracker uses.
type nodeSteps struct {
	mu struct {
		sync.Mutex
		admitted, running map[string]time.Time
	}
}

func newNodeSteps() *nodeSteps {
	s := &nodeSteps{}
	s.mu.admitted = map[string]time.Time{}
	s.mu.running = map[string]time.Time{}
	return s
}

// observe is the simulator's PodObserver. A pod admitted twice (a node
// that failed and recovered) keeps its first admission.
func (s *nodeSteps) observe(step sim.PodStep, namespace, name string, at time.Time) {
	k := namespace + "/" + name
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mu.admitted
	if step == sim.PodRunningWritten {
		m = s.mu.running
	}
	if _, ok := m[k]; !ok {
		m[k] = at
	}
}

// get returns a pod's admission and Running-acknowledged times (zero if
// not seen).
func (s *nodeSteps) get(key string) (admitted, running time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.admitted[key], s.mu.running[key]
}

// stepKey names a startup step in the latency table.
func stepKey(step string) loadtest.Key {
	return loadtest.Key{Verb: "STARTUP", Resource: "pods", Scope: step}
}

func nonNeg(d time.Duration) time.Duration { return max(0, d) }

// peakRate is the largest increase per second of a count series over any
// span of at least a second between t0 and t1 (seconds since start).
func peakRate(series []loadtest.Series, name string, t0, t1 float64) float64 {
	var peak float64
	for _, s := range series {
		if s.Name != name {
			continue
		}
		pts := s.Points
		for i := range pts {
			if pts[i].T < t0 || pts[i].T > t1 {
				continue
			}
			for j := i + 1; j < len(pts); j++ {
				if dt := pts[j].T - pts[i].T; dt >= 1 {
					peak = max(peak, (pts[j].V-pts[i].V)/dt)
					break
				}
			}
		}
	}
	return peak
}

// deployment is a Deployment of n one-container pods labelled with its
// name.
func deployment(name string, n int32) *appsv1.Deployment {
	labels := map[string]string{"app": name, "myriad-bench": "density"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{podContainer()}},
			},
		},
	}
}

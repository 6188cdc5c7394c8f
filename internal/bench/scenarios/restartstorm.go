package scenarios

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// RestartStorm is the `restart-storm` scenario: with hollow nodes and
// client-go informers connected and a probe calling steadily, the API
// server is restarted (SIGTERM and start again when the bench started it,
// else the restart command). It measures the time to /readyz, the time
// until every informer has caught up again, how the informers came back
// (relists versus watch resumes, counted in their list and watch calls),
// 429s, and the probe's latency before, during and after recovery.
type RestartStorm struct {
	// Nodes is the number of hollow nodes (each with its own pod watch
	// and Lease heartbeat). Default 50.
	Nodes int
	// Informers connected during the restart, alternately on all pods and
	// on the bench namespace's config maps. Default 10.
	Informers int
	// Pods bound to the hollow nodes before the restart. Default 200.
	Pods int
	// Objects are other objects created before the restart, in a
	// namespace of their own (the million objects beside the
	// pods): ConfigMaps and Secrets four tenths each, Events and headless
	// Services one tenth each. Default none.
	Objects int
	// ProbeRate of probe calls per second. Default 20.
	ProbeRate float64
	// Steady is how long to measure before the restart and after
	// recovery. Default 5 s.
	Steady time.Duration
	// RecoveryTimeout bounds the wait for recovery. Default 60 s.
	RecoveryTimeout time.Duration
}

func (c *RestartStorm) defaults() {
	if c.Nodes <= 0 {
		c.Nodes = 50
	}
	if c.Informers <= 0 {
		c.Informers = 10
	}
	if c.Pods <= 0 {
		c.Pods = 200
	}
	if c.ProbeRate <= 0 {
		c.ProbeRate = 20
	}
	if c.Steady <= 0 {
		c.Steady = 5 * time.Second
	}
	if c.RecoveryTimeout <= 0 {
		c.RecoveryTimeout = 60 * time.Second
	}
}

// createObject creates the i-th of RestartStorm.Objects in ns.
func createObject(ctx context.Context, c kubernetes.Interface, ns string, i int) error {
	name := fmt.Sprintf("o-%d", i)
	meta := metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "myriad-bench"}}
	var err error
	switch i % 10 {
	case 0:
		_, err = c.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, // headless: a million need no addresses
			Selector:  map[string]string{"app": name},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80}},
		}}, metav1.CreateOptions{})
	case 1:
		_, err = c.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: meta,
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name, APIVersion: "v1"},
			Reason:         "Bench", Message: "a restart-storm object", Type: corev1.EventTypeNormal,
			Source: corev1.EventSource{Component: "myriad-bench"}, Count: 1,
		}, metav1.CreateOptions{})
	case 2, 3, 4, 5:
		cm := configMap(name)
		cm.Namespace = ""
		_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	default:
		_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: meta,
			Data: map[string][]byte{"password": []byte("correct horse battery staple " + name)}}, metav1.CreateOptions{})
	}
	return err
}

// countObjects counts createObject's kinds in ns, listing metadata only
// in pages.
func countObjects(ctx context.Context, env *loadtest.Env, ns string) (int, error) {
	mc, err := metadata.NewForConfig(env.RESTConfig)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, gvr := range []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("configmaps"),
		corev1.SchemeGroupVersion.WithResource("secrets"),
		corev1.SchemeGroupVersion.WithResource("services"),
		corev1.SchemeGroupVersion.WithResource("events"),
	} {
		opts := metav1.ListOptions{Limit: 5000, LabelSelector: "app=myriad-bench"}
		for {
			l, err := mc.Resource(gvr).Namespace(ns).List(ctx, opts)
			if err != nil {
				return 0, fmt.Errorf("listing %s: %w", gvr.Resource, err)
			}
			total += len(l.Items)
			if l.Continue == "" {
				break
			}
			opts.Continue = l.Continue
		}
	}
	return total, nil
}

// countingInformer is an informer whose list and watch calls are counted.
type countingInformer struct {
	informer       cache.SharedIndexInformer
	lists, watches atomic.Int64
	kind           string
}

func newCountingInformer(c kubernetes.Interface, kind, ns string) *countingInformer {
	ci := &countingInformer{kind: kind}
	var lw *cache.ListWatch
	var obj runtime.Object
	switch kind {
	case "pods":
		obj = &corev1.Pod{}
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				ci.lists.Add(1)
				return c.CoreV1().Pods("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				ci.watches.Add(1)
				return c.CoreV1().Pods("").Watch(ctx, o)
			},
		}
	default:
		obj = &corev1.ConfigMap{}
		lw = &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				ci.lists.Add(1)
				return c.CoreV1().ConfigMaps(ns).List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				ci.watches.Add(1)
				return c.CoreV1().ConfigMaps(ns).Watch(ctx, o)
			},
		}
	}
	ci.informer = cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	return ci
}

// has reports whether the informer's store holds ns/name.
func (ci *countingInformer) has(ns, name string) bool {
	_, ok, _ := ci.informer.GetStore().GetByKey(ns + "/" + name)
	return ok
}

// Run implements loadtest.Scenario.
func (c RestartStorm) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	r.Params["nodes"] = itoa(c.Nodes)
	r.Params["informers"] = itoa(c.Informers)
	r.Params["pods"] = itoa(c.Pods)
	r.Params["objects"] = itoa(c.Objects)
	r.Params["probe-rate"] = ftoa(c.ProbeRate)
	r.Params["steady"] = c.Steady.String()
	r.Params["recovery-timeout"] = c.RecoveryTimeout.String()
	if env.Server == nil && env.RestartCommand == "" {
		return fmt.Errorf("restart-storm against a server given by --kubeconfig needs --restart-command")
	}
	env.OwnLatencyTable = true

	id := runID()
	prefix := "bench-restart-" + id
	nodes, err := hollowNodes(ctx, env, prefix+"-node-", c.Nodes, false)
	if err != nil {
		return err
	}
	names := nodes.NodeNames()
	defer deleteNodes(ctx, env, names)
	defer nodes.Stop()
	namespaces, err := createNamespaces(ctx, env.Client, prefix, 2)
	if err != nil {
		return err
	}
	ns := namespaces[0]
	defer cleanupNamespaces(ctx, env, namespaces)
	env.Progress.Phase("prefill", int64(c.Pods), time.Time{}, nil)
	if err := prefill(ctx, env, c.Pods, func(ctx context.Context, i int) error {
		_, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("p-%d", i), names[i%len(names)]), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if c.Objects > 0 {
		env.Progress.Phase("prefill objects", int64(c.Objects), time.Time{}, nil)
		if err := prefill(ctx, env, c.Objects, func(ctx context.Context, i int) error {
			return createObject(ctx, env.Client, namespaces[1], i)
		}); err != nil {
			return err
		}
	}
	for i := range 20 {
		if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
	}

	// Informers, each on its own clientset (client-go shares one TLS
	// transport among them, as the controllers of one process do).
	infCtx, stopInformers := context.WithCancel(ctx)
	var informersRunning sync.WaitGroup
	defer func() { stopInformers(); informersRunning.Wait() }()
	var informers []*countingInformer
	for i := range c.Informers {
		client, err := kubernetes.NewForConfig(env.RESTConfig)
		if err != nil {
			return err
		}
		kind := "pods"
		if i%2 == 1 {
			kind = "configmaps"
		}
		ci := newCountingInformer(client, kind, ns)
		informers = append(informers, ci)
		informersRunning.Add(1)
		go func() {
			defer informersRunning.Done()
			ci.informer.RunWithContext(infCtx)
		}()
	}
	for _, ci := range informers {
		if !cache.WaitForCacheSync(ctx.Done(), ci.informer.HasSynced) {
			return fmt.Errorf("informers did not sync: %w", ctx.Err())
		}
	}

	// The probe: a GET and a create+delete of a config map, all the time.
	var phaseRec atomic.Pointer[loadtest.Recorder]
	recs := map[string]*loadtest.Recorder{}
	setPhase := func(name string) {
		rec := loadtest.NewRecorder(env.Start)
		recs[name] = rec
		phaseRec.Store(rec)
	}
	setPhase("before")
	probeCtx, stopProbe := context.WithCancel(ctx)
	observe := func(k loadtest.Key, call func() error) error {
		t := time.Now()
		err := call()
		d := time.Since(t)
		if err != nil && probeCtx.Err() != nil {
			return err // cut off by the probe's own end, not the server
		}
		env.Latency.Observe(k, d, err)
		phaseRec.Load().Observe(k, d, err)
		return err
	}
	probeDone := make(chan struct{})
	var seq atomic.Int64
	go func() {
		defer close(probeDone)
		pace(probeCtx, c.ProbeRate, 8, time.Now().Add(24*time.Hour), 0, func(ctx context.Context, _ int, i int64) {
			cms := env.Client.CoreV1().ConfigMaps(ns)
			if i%2 == 0 {
				_ = observe(key("GET", "configmaps", "resource"), func() error {
					_, err := cms.Get(ctx, fmt.Sprintf("cm-%d", i%20), metav1.GetOptions{})
					return err
				})
				return
			}
			name := fmt.Sprintf("probe-%d", seq.Add(1))
			if observe(key("POST", "configmaps", "resource"), func() error {
				_, err := cms.Create(ctx, configMap(name), metav1.CreateOptions{})
				return err
			}) == nil {
				_ = observe(key("DELETE", "configmaps", "resource"), func() error { return cms.Delete(ctx, name, metav1.DeleteOptions{}) })
			}
		})
	}()
	defer func() { stopProbe(); <-probeDone }()

	env.Progress.Phase("before restart", 0, time.Now().Add(c.Steady), nil)
	if err := sleepCtx(ctx, c.Steady); err != nil {
		return err
	}
	lists0, watches0 := informerCalls(informers)
	sim0 := nodes.Stats()
	before, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}

	// Restart.
	setPhase("recovery")
	restartAt := time.Now()
	env.Progress.Phase("restart", 0, restartAt.Add(c.RecoveryTimeout), nil)
	r.Series = append(r.Series, loadtest.Series{Name: "restart", Unit: "event", Points: []loadtest.Point{{T: env.Elapsed(), V: 1}}})
	if err := env.Restart(ctx); err != nil {
		return err
	}
	stoppedAt := time.Now()
	var readyAt, syncedAt time.Time
	deadline := restartAt.Add(c.RecoveryTimeout)
	env.Progress.Phase("waiting for /readyz", 0, deadline, nil)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if env.Metrics.Ready(ctx) {
			readyAt = time.Now()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if readyAt.IsZero() {
		return fmt.Errorf("server not ready %s after the restart", c.RecoveryTimeout)
	}
	// Markers written after the server is back: an informer has caught up
	// once its store holds the marker of its kind.
	markerPod := pod("marker-"+id, names[0])
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, markerPod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("marker pod: %w", err)
	}
	if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, configMap("marker-"+id), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("marker config map: %w", err)
	}
	env.Progress.Phase("waiting for informers", int64(len(informers)), deadline, nil)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		n := 0
		for _, ci := range informers {
			if ci.has(ns, "marker-"+id) {
				n++
			}
		}
		if n == len(informers) {
			syncedAt = time.Now()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	lists1, watches1 := informerCalls(informers)
	setPhase("after")
	env.Progress.Phase("after recovery", 0, time.Now().Add(c.Steady), nil)
	if err := sleepCtx(ctx, c.Steady); err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond)
	after, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	sim1 := nodes.Stats()
	stopProbe()
	<-probeDone

	if c.Objects > 0 {
		// Every object acknowledged before the restart is there after it.
		n, err := countObjects(ctx, env, namespaces[1])
		if err != nil {
			return fmt.Errorf("counting the objects after the restart: %w", err)
		}
		r.AddFigure("objects_after_restart", "other objects listed after the restart (of --objects)", float64(n), "")
	}
	watchesOpen := -1.0
	if s, err := env.Metrics.Scrape(ctx); err == nil {
		watchesOpen = s.Watches
	}
	// The SLOs judge steady state: calls cut off by the restart itself
	// are reported, not judged.
	for _, ph := range []string{"before", "recovery", "after"} {
		for _, st := range recs[ph].Stats(ph != "recovery") {
			st.Phase = ph
			r.Latencies = append(r.Latencies, st)
		}
	}
	d := after.Since(before)
	r.AddFigure("stop_seconds", "SIGTERM (or restart command) to process gone", stoppedAt.Sub(restartAt).Seconds(), "s")
	r.AddFigure("ready_seconds", "restart to /readyz ok", readyAt.Sub(restartAt).Seconds(), "s")
	if !syncedAt.IsZero() {
		r.AddFigure("informers_synced_seconds", "restart to every informer caught up", syncedAt.Sub(restartAt).Seconds(), "s")
	}
	r.AddFigure("informer_relists", "informer relists (list calls after the restart)", float64(lists1-lists0), "")
	r.AddFigure("informer_watch_resumes", "informer watch calls after the restart", float64(watches1-watches0), "")
	r.AddFigure("server_lists_after", "LISTs the server counted from the restart on (all clients)",
		d.Sum(func(k loadtest.RequestKey) bool { return k.Verb == "LIST" }), "")
	r.AddFigure("server_watches_open", "watches open on the server after recovery (all clients)", watchesOpen, "")
	r.AddFigure("server_429", "429s the server answered from the restart on",
		d.Sum(func(k loadtest.RequestKey) bool { return k.Code == "429" }), "")
	r.AddFigure("heartbeat_errors", "hollow node heartbeats that failed", float64(sim1.RenewalErrors-sim0.RenewalErrors), "")
	r.AddFigure("max_renew_gap", "longest gap between a node's heartbeats", sim1.MaxRenewGap.Seconds(), "s")
	denied := sim1.NodeRequestsDenied - sim0.NodeRequestsDenied
	r.AddFigure("node_requests_denied", "hollow nodes' requests answered 401/403 (each acts as system:node:<name>)", float64(denied), "")
	r.AddVerdict("every informer caught up", fmt.Sprintf("within %s", c.RecoveryTimeout), fmt.Sprint(!syncedAt.IsZero()), !syncedAt.IsZero())
	r.AddVerdict("no node missed its Lease", "longest gap < 40s", sim1.MaxRenewGap.Round(time.Millisecond).String(), sim1.MaxRenewGap < 40*time.Second)
	r.AddVerdict("no node request denied across the restart", "0", fmt.Sprint(denied), denied == 0)
	return nil
}

func informerCalls(informers []*countingInformer) (lists, watches int64) {
	for _, ci := range informers {
		lists += ci.lists.Load()
		watches += ci.watches.Load()
	}
	return lists, watches
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

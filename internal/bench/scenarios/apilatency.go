package scenarios

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/bench/loadtest"
)

// APILatency is the `api-latency` scenario: a steady mix of mutating and
// read calls on config maps and pods, judged per verb, resource and scope
// against upstream's API call latency SLOs.
type APILatency struct {
	// Duration of the measured phase. Default 30 s.
	Duration time.Duration
	// Rate of calls per second. Default 100.
	Rate float64
	// Workers making calls concurrently. Default 16.
	Workers int
	// MaxCalls bounds the calls (0: Rate × Duration).
	MaxCalls int64
	// Namespaces the objects are spread over. Default 4.
	Namespaces int
	// Prefill config maps and pods created per namespace before measuring,
	// so lists return something. Default 50.
	Prefill int
}

func (c *APILatency) defaults() {
	if c.Duration <= 0 {
		c.Duration = 30 * time.Second
	}
	if c.Rate <= 0 {
		c.Rate = 100
	}
	if c.Workers <= 0 {
		c.Workers = 16
	}
	if c.Namespaces <= 0 {
		c.Namespaces = 4
	}
	if c.Prefill < 0 {
		c.Prefill = 0
	} else if c.Prefill == 0 {
		c.Prefill = 50
	}
}

// apiOp is one kind of call in the mix, with its weight.
type apiOp struct {
	key    loadtest.Key
	weight float64
}

// apiMix is the call mix: mostly object reads and writes, some namespace
// lists, a few cluster-wide lists (as a controller's relist would do).
var apiMix = []apiOp{
	{key("POST", "configmaps", "resource"), 3},
	{key("GET", "configmaps", "resource"), 4},
	{key("PUT", "configmaps", "resource"), 2},
	{key("PATCH", "configmaps", "resource"), 2},
	{key("DELETE", "configmaps", "resource"), 2},
	{key("LIST", "configmaps", "namespace"), 2},
	{key("LIST", "configmaps", "cluster"), 0.5},
	{key("POST", "pods", "resource"), 2},
	{key("GET", "pods", "resource"), 3},
	{key("PUT", "pods", "resource"), 1},
	{key("PATCH", "pods", "resource"), 1},
	{key("DELETE", "pods", "resource"), 1},
	{key("LIST", "pods", "namespace"), 2},
	{key("LIST", "pods", "cluster"), 0.5},
}

// apiWorker is one worker's own objects: only it touches them, so its
// updates never conflict with another's.
type apiWorker struct {
	ns   string
	cms  []*corev1.ConfigMap
	pods []*corev1.Pod
	seq  int
	rnd  *rand.Rand
}

// Run implements loadtest.Scenario.
func (c APILatency) Run(ctx context.Context, env *loadtest.Env) error {
	c.defaults()
	r := env.Result
	maxCalls := c.MaxCalls
	if maxCalls <= 0 {
		maxCalls = int64(c.Rate * c.Duration.Seconds())
	}
	r.Params["duration"] = c.Duration.String()
	r.Params["rate"] = ftoa(c.Rate)
	r.Params["workers"] = itoa(c.Workers)
	r.Params["max-calls"] = fmt.Sprint(maxCalls)
	r.Params["namespaces"] = itoa(c.Namespaces)
	r.Params["prefill"] = itoa(c.Prefill)
	env.SLOs = true

	prefix := "bench-api-" + runID()
	namespaces, err := createNamespaces(ctx, env.Client, prefix, c.Namespaces)
	if err != nil {
		return err
	}
	defer cleanupNamespaces(ctx, env, namespaces)
	env.Progress.Phase("prefill", int64(2*c.Prefill*c.Namespaces), time.Time{}, nil)
	for _, ns := range namespaces {
		for i := range c.Prefill {
			if _, err := env.Client.CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("prefill-%d", i)), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
			if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod(fmt.Sprintf("prefill-%d", i), ""), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("prefill: %w", err)
			}
			env.Progress.Add(2)
		}
	}
	r.AddFigure("prefill_objects", "objects created before measuring", float64(2*c.Prefill*c.Namespaces), "")

	workers := make([]*apiWorker, c.Workers)
	for i := range workers {
		workers[i] = &apiWorker{ns: namespaces[i%len(namespaces)], rnd: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
	}
	var total float64
	for _, op := range apiMix {
		total += op.weight
	}
	before, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	start := time.Now()
	deadline := start.Add(c.Duration)
	env.Progress.Phase("measure", maxCalls, deadline, nil)
	started, dropped := pace(ctx, c.Rate, c.Workers, deadline, maxCalls, func(ctx context.Context, w int, _ int64) {
		wk := workers[w]
		x := wk.rnd.Float64() * total
		op := apiMix[len(apiMix)-1]
		for _, o := range apiMix {
			if x < o.weight {
				op = o
				break
			}
			x -= o.weight
		}
		wk.do(ctx, env, op.key, w)
		env.Progress.Add(1)
	})
	elapsed := time.Since(start)
	// The server counts a request just after answering it: give the last
	// ones a moment before reading its counters.
	time.Sleep(200 * time.Millisecond)
	after, err := env.Monitor.Mark(ctx)
	if err != nil {
		return fmt.Errorf("reading /metrics: %w", err)
	}
	r.AddFigure("calls", "calls made", float64(started), "")
	r.AddFigure("calls_per_second", "achieved call rate", float64(started)/elapsed.Seconds(), "calls/s")
	r.AddFigure("dropped_ticks", "calls skipped because every worker was busy", float64(dropped), "")
	addServerCountCheck(env, before, after, apiMix)
	return nil
}

// addServerCountCheck compares the bench's own count of its calls of the
// mix's keys with the server's apiserver_request_total increase for them
// between the marks (client-go retries of 429s would make the server's
// larger).
func addServerCountCheck(env *loadtest.Env, before, after loadtest.Totals, mix []apiOp) {
	want := map[loadtest.Key]bool{}
	for _, op := range mix {
		want[op.key] = true
	}
	server := after.Since(before).Sum(func(k loadtest.RequestKey) bool {
		return k.Subresource == "" && want[loadtest.Key{Verb: k.Verb, Resource: k.Resource, Scope: k.Scope}]
	})
	var bench int
	for _, st := range env.Latency.Stats(false) {
		if want[st.Key] {
			bench += st.Count + st.Errors
		}
	}
	env.Result.AddFigure("bench_counted_calls", "calls of the mix the bench counted", float64(bench), "")
	env.Result.AddFigure("server_counted_calls", "the same calls in the server's apiserver_request_total", server, "")
	env.Result.AddVerdict("server counted the bench's calls", fmt.Sprint(bench), fmt.Sprint(server), float64(bench) == server)
}

func (wk *apiWorker) do(ctx context.Context, env *loadtest.Env, k loadtest.Key, w int) {
	c := env.Client.CoreV1()
	rec := env.Latency
	wk.seq++
	name := fmt.Sprintf("w%d-%d", w, wk.seq)
	switch k.Resource {
	case "configmaps":
		if k.Verb != "POST" && k.Scope == "resource" && len(wk.cms) == 0 {
			k = key("POST", "configmaps", "resource")
		}
		switch k {
		case key("POST", "configmaps", "resource"):
			var cm *corev1.ConfigMap
			if rec.Time(k, func() (err error) {
				cm, err = c.ConfigMaps(wk.ns).Create(ctx, configMap(name), metav1.CreateOptions{})
				return err
			}) == nil {
				wk.cms = append(wk.cms, cm)
			}
		case key("GET", "configmaps", "resource"):
			cm := wk.cms[wk.rnd.IntN(len(wk.cms))]
			_ = rec.Time(k, func() error { _, err := c.ConfigMaps(wk.ns).Get(ctx, cm.Name, metav1.GetOptions{}); return err })
		case key("PUT", "configmaps", "resource"):
			i := wk.rnd.IntN(len(wk.cms))
			cm := wk.cms[i].DeepCopy()
			cm.Data["seq"] = fmt.Sprint(wk.seq)
			var out *corev1.ConfigMap
			if rec.Time(k, func() (err error) {
				out, err = c.ConfigMaps(wk.ns).Update(ctx, cm, metav1.UpdateOptions{})
				return err
			}) == nil {
				wk.cms[i] = out
			}
		case key("PATCH", "configmaps", "resource"):
			i := wk.rnd.IntN(len(wk.cms))
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"seq":"%d"}}}`, wk.seq)
			var out *corev1.ConfigMap
			if rec.Time(k, func() (err error) {
				out, err = c.ConfigMaps(wk.ns).Patch(ctx, wk.cms[i].Name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			}) == nil {
				wk.cms[i] = out
			}
		case key("DELETE", "configmaps", "resource"):
			i := wk.rnd.IntN(len(wk.cms))
			n := wk.cms[i].Name
			wk.cms = append(wk.cms[:i], wk.cms[i+1:]...)
			_ = rec.Time(k, func() error { return c.ConfigMaps(wk.ns).Delete(ctx, n, metav1.DeleteOptions{}) })
		case key("LIST", "configmaps", "namespace"):
			_ = rec.Time(k, func() error { _, err := c.ConfigMaps(wk.ns).List(ctx, metav1.ListOptions{}); return err })
		case key("LIST", "configmaps", "cluster"):
			_ = rec.Time(k, func() error { _, err := c.ConfigMaps("").List(ctx, metav1.ListOptions{}); return err })
		}
	case "pods":
		if k.Verb != "POST" && k.Scope == "resource" && len(wk.pods) == 0 {
			k = key("POST", "pods", "resource")
		}
		switch k {
		case key("POST", "pods", "resource"):
			var p *corev1.Pod
			if rec.Time(k, func() (err error) {
				p, err = c.Pods(wk.ns).Create(ctx, pod(name, ""), metav1.CreateOptions{})
				return err
			}) == nil {
				wk.pods = append(wk.pods, p)
			}
		case key("GET", "pods", "resource"):
			n := wk.pods[wk.rnd.IntN(len(wk.pods))].Name
			_ = rec.Time(k, func() error { _, err := c.Pods(wk.ns).Get(ctx, n, metav1.GetOptions{}); return err })
		case key("PUT", "pods", "resource"):
			// Others write pods too (the scheduler's status updates), so a
			// cached copy can be stale: on 409, read and retry, as a
			// controller would. Every call is recorded, the 409s included.
			i := wk.rnd.IntN(len(wk.pods))
			cur := wk.pods[i]
			for range 3 {
				p := cur.DeepCopy()
				if p.Annotations == nil {
					p.Annotations = map[string]string{}
				}
				p.Annotations["seq"] = fmt.Sprint(wk.seq)
				var out *corev1.Pod
				err := rec.Time(k, func() (err error) {
					out, err = c.Pods(wk.ns).Update(ctx, p, metav1.UpdateOptions{})
					return err
				})
				if err == nil {
					wk.pods[i] = out
					break
				}
				if !apierrors.IsConflict(err) {
					break
				}
				if rec.Time(key("GET", "pods", "resource"), func() (err error) {
					cur, err = c.Pods(wk.ns).Get(ctx, p.Name, metav1.GetOptions{})
					return err
				}) != nil {
					break
				}
			}
		case key("PATCH", "pods", "resource"):
			i := wk.rnd.IntN(len(wk.pods))
			patch := fmt.Appendf(nil, `{"metadata":{"labels":{"seq":"%d"}}}`, wk.seq)
			var out *corev1.Pod
			if rec.Time(k, func() (err error) {
				out, err = c.Pods(wk.ns).Patch(ctx, wk.pods[i].Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
				return err
			}) == nil {
				wk.pods[i] = out
			}
		case key("DELETE", "pods", "resource"):
			i := wk.rnd.IntN(len(wk.pods))
			n := wk.pods[i].Name
			wk.pods = append(wk.pods[:i], wk.pods[i+1:]...)
			zero := int64(0)
			_ = rec.Time(k, func() error { return c.Pods(wk.ns).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero}) })
		case key("LIST", "pods", "namespace"):
			_ = rec.Time(k, func() error { _, err := c.Pods(wk.ns).List(ctx, metav1.ListOptions{}); return err })
		case key("LIST", "pods", "cluster"):
			_ = rec.Time(k, func() error { _, err := c.Pods("").List(ctx, metav1.ListOptions{}); return err })
		}
	}
}

// configMap is a small config map (about 100 bytes of data).
func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "myriad-bench"}},
		Data:       map[string]string{"seq": "0", "payload": "the quick brown fox jumps over the lazy dog, twice: the quick brown fox jumps"},
	}
}

// pod is a one-container pod, bound to nodeName when not empty.
func pod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "myriad-bench"}},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{podContainer()},
		},
	}
}

func podContainer() corev1.Container {
	return corev1.Container{
		Name:  "app",
		Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    mustQuantity("10m"),
			corev1.ResourceMemory: mustQuantity("16Mi"),
		}},
	}
}

package apibench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/procstat"
)

// leaseNamespace holds node Leases, as upstream's kubelets keep them.
const leaseNamespace = "kube-node-lease"

func runPrefix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return "bench-" + hex.EncodeToString(b[:])
}

func (b *bench) namespace(i int) string { return fmt.Sprintf("apibench-%d", i%b.cfg.Namespaces) }
func (b *bench) node(i int) string      { return fmt.Sprintf("apibench-node-%05d", i%b.cfg.Nodes) }
func (b *bench) app(i int) string       { return fmt.Sprintf("app-%d", i%b.cfg.Apps) }

// pod is the i-th benchmark pod: a realistic pod (one container with
// resources, env, ports, a projected volume, an owner reference) bound to a
// node, as a controller and the scheduler would leave it.
func (b *bench) pod(i int) *corev1.Pod {
	app := b.app(i)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       b.namespace(i),
			Name:            fmt.Sprintf("%s-%08d", b.prefix, i),
			Labels:          map[string]string{"app": app, "pod-template-hash": "5d4f8c9b7", "tier": "backend"},
			Annotations:     map[string]string{"kubernetes.io/config.seen": "2026-11-22T04:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-5d4f8c9b7", UID: "11111111-2222-3333-4444-555555555555"}},
		},
		Spec: corev1.PodSpec{
			NodeName:           b.node(i),
			Containers:         []corev1.Container{benchutil.WithTokenMount(benchutil.AppContainer(app))},
			Volumes:            []corev1.Volume{benchutil.TokenVolume()},
			ServiceAccountName: "default",
			RestartPolicy:      corev1.RestartPolicyAlways,
		},
	}
}

// ensureNamespace creates ns unless it exists, with its "default"
// ServiceAccount: the bench runs against an API server alone (myriad
// apiserver), where no controller makes it, and ServiceAccount admission
// refuses pods without it.
func (b *bench) ensureNamespace(ctx context.Context, ns string) error {
	_, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("apibench: creating namespace %s: %w", ns, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := b.cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("apibench: creating the default ServiceAccount of %s: %w", ns, err)
	}
	return nil
}

// creates is phase 1: Pods creates from Workers goroutines.
func (b *bench) creates(ctx context.Context) (*Stat, error) {
	for i := range min(b.cfg.Namespaces, b.cfg.Pods) {
		if err := b.ensureNamespace(ctx, b.namespace(i)); err != nil {
			return nil, err
		}
	}
	st, err := runN(ctx, b, "create pods", b.cfg.Pods, b.cfg.Workers, func(ctx context.Context, i int) (int, error) {
		p := b.pod(i)
		var err error
		if b.wire != nil {
			err = b.wire.createPod(ctx, p)
		} else {
			_, err = b.cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		}
		if err != nil {
			return 0, fmt.Errorf("creating pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		return 1, nil
	})
	if err != nil {
		return nil, fmt.Errorf("apibench: creates: %w", err)
	}
	b.created = true
	st.Target = "≥ 3,000/s, p99 < 50 ms"
	st.Met = st.PerSec >= 3000 && st.P99 < 50*time.Millisecond
	return st, nil
}

// target is one pod the read phase reads, and the node, label and
// namespace it lists by.
type target struct{ ns, name, node, app string }

// readTargets returns pods to read: this run's pods if the create phase
// ran, otherwise a sample of what the server holds.
func (b *bench) readTargets(ctx context.Context) ([]target, error) {
	var ts []target
	if b.created {
		for range 1000 {
			i := mrand.IntN(b.cfg.Pods)
			ts = append(ts, target{b.namespace(i), fmt.Sprintf("%s-%08d", b.prefix, i), b.node(i), b.app(i)})
		}
		return ts, nil
	}
	list, err := b.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("apibench: sampling pods: %w", err)
	}
	for _, p := range list.Items {
		ts = append(ts, target{p.Namespace, p.Name, p.Spec.NodeName, p.Labels["app"]})
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("apibench: the server holds no pods to read (run the create phase)")
	}
	return ts, nil
}

// reads is phase 2: GET and filtered LISTs with the pods loaded.
func (b *bench) reads(ctx context.Context, res *Result) error {
	ts, err := b.readTargets(ctx)
	if err != nil {
		return err
	}
	pick := func(i int) target { return ts[(i*7919)%len(ts)] }
	pods := b.cs.CoreV1().Pods
	res.Get, err = runN(ctx, b, "get pod", b.cfg.Gets, b.cfg.ReadWorkers, func(ctx context.Context, i int) (int, error) {
		t := pick(i)
		if b.wire != nil {
			return 1, b.wire.getPod(ctx, t.ns, t.name)
		}
		_, err := pods(t.ns).Get(ctx, t.name, metav1.GetOptions{})
		return 1, err
	})
	if err != nil {
		return fmt.Errorf("apibench: get: %w", err)
	}
	res.Get.Target, res.Get.Met = "p99 < 5 ms", res.Get.P99 < 5*time.Millisecond
	list := func(name string, n int, opts func(t target) (string, metav1.ListOptions)) (*Stat, error) {
		st, err := runN(ctx, b, name, n, b.cfg.ReadWorkers, func(ctx context.Context, i int) (int, error) {
			ns, o := opts(pick(i))
			if b.wire != nil {
				return b.wire.listPods(ctx, ns, o)
			}
			l, err := pods(ns).List(ctx, o)
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		})
		if err != nil {
			return nil, fmt.Errorf("apibench: %s: %w", name, err)
		}
		return st, nil
	}
	if res.ListByNode, err = list("list by node", b.cfg.Gets, func(t target) (string, metav1.ListOptions) {
		return "", metav1.ListOptions{FieldSelector: "spec.nodeName=" + t.node}
	}); err != nil {
		return err
	}
	res.ListByNode.Target, res.ListByNode.Met = "p99 < 5 ms", res.ListByNode.P99 < 5*time.Millisecond
	if res.ListByLabel, err = list("list by label", b.cfg.Lists, func(t target) (string, metav1.ListOptions) {
		return "", metav1.ListOptions{LabelSelector: "app=" + t.app}
	}); err != nil {
		return err
	}
	res.ListByLabel.Target, res.ListByLabel.Met = "p99 < 1 s", res.ListByLabel.P99 < time.Second
	if res.ListByNamespace, err = list("list by namespace", b.cfg.Lists, func(t target) (string, metav1.ListOptions) {
		return t.ns, metav1.ListOptions{}
	}); err != nil {
		return err
	}
	res.ListByNamespace.Target, res.ListByNamespace.Met = "p99 < 1 s", res.ListByNamespace.P99 < time.Second
	return nil
}

// listAll is phase 2's unfiltered LIST of every pod, once as protobuf and
// once as JSON, streamed to nowhere while the server's RSS is sampled.
func (b *bench) listAll(ctx context.Context) ([]ListAll, error) {
	var out []ListAll
	for _, ct := range []string{protobufType, jsonType} {
		pid, observe := procstat.Self, b.inProcess
		if !b.inProcess && b.cfg.ServerPID > 0 {
			pid, observe = b.cfg.ServerPID, true
		}
		if b.inProcess {
			runtime.GC() // the in-process server starts from its live heap, as a separate one would
		}
		var la ListAll
		la.ContentType = ct
		var peak *procstat.Peak
		if observe {
			if rss, _, err := procstat.ReadMemory(pid); err == nil {
				la.RSSBefore = rss
			}
			peak = procstat.StartPeak(pid, 5*time.Millisecond)
		}
		start := time.Now()
		body, err := b.cs.CoreV1().RESTClient().Get().Resource("pods").SetHeader("Accept", ct).Stream(ctx)
		if err == nil {
			la.Bytes, err = drain(body)
		}
		la.Time = time.Since(start)
		if peak != nil {
			la.PeakRSS = peak.Stop()
		}
		if err != nil {
			return nil, fmt.Errorf("apibench: list all (%s): %w", ct, err)
		}
		out = append(out, la)
	}
	return out, nil
}

// leases is phase 3: one Lease per node, renewed in a loop by LeaseWorkers
// goroutines for LeaseDuration; each worker owns every LeaseWorkers-th
// Lease, so renewals do not conflict.
func (b *bench) leases(ctx context.Context) (*Stat, error) {
	if err := b.ensureNamespace(ctx, leaseNamespace); err != nil {
		return nil, err
	}
	api := b.cs.CoordinationV1().Leases(leaseNamespace)
	leases := make([]*coordinationv1.Lease, b.cfg.Nodes)
	if _, err := runN(ctx, b, "create leases", b.cfg.Nodes, b.cfg.Workers, func(ctx context.Context, i int) (int, error) {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: b.node(i)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(b.node(i)), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		got, err := api.Create(ctx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			got, err = api.Get(ctx, l.Name, metav1.GetOptions{})
		}
		leases[i] = got
		return 1, err
	}); err != nil {
		return nil, fmt.Errorf("apibench: creating leases: %w", err)
	}

	workers := min(b.cfg.LeaseWorkers, b.cfg.Nodes)
	lat := make([][]time.Duration, workers)
	var (
		conflicts atomic.Int64
		wg        sync.WaitGroup
		firstErr  error
		errOnce   sync.Once
		done      atomic.Int64
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopProgress := benchutil.ReportProgress(b.cfg.Progress, "lease updates", 0, &done)
	cpu0 := b.cpu()
	start := time.Now()
	deadline := start.Add(b.cfg.LeaseDuration)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := w; ctx.Err() == nil && time.Now().Before(deadline); j += workers {
				if j >= len(leases) {
					j = w
				}
				l := leases[j].DeepCopy()
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				t0 := time.Now()
				got, err := api.Update(ctx, l, metav1.UpdateOptions{})
				lat[w] = append(lat[w], time.Since(t0))
				done.Add(1)
				switch {
				case apierrors.IsConflict(err):
					conflicts.Add(1)
					if got, err = api.Get(ctx, l.Name, metav1.GetOptions{}); err == nil {
						leases[j] = got
					}
				case err == nil:
					leases[j] = got
				}
				if err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("updating lease %s: %w", l.Name, err); cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu1 := b.cpu()
	stopProgress()
	if firstErr != nil {
		return nil, fmt.Errorf("apibench: leases: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	st := newStat("lease updates", all, elapsed)
	st.Errors = int(conflicts.Load())
	st.setCPU(cpu0, cpu1)
	st.Target = "≥ 5,000/s"
	st.Met = st.PerSec >= 5000
	return st, nil
}

// idle is phase 4: the server's memory with everything loaded, after
// IdleWait.
func (b *bench) idle(ctx context.Context, res *Result) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.IdleWait):
	}
	if b.inProcess {
		runtime.GC()
	}
	raw, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("apibench: reading /metrics: %w", err)
	}
	res.IdleRSS = metricValue(string(raw), "process_resident_memory_bytes")
	res.IdleHeap = metricValue(string(raw), "go_memstats_heap_alloc_bytes")
	res.IdleHeapSys = metricValue(string(raw), "go_memstats_heap_sys_bytes")
	res.IdleHeapReleased = metricValue(string(raw), "go_memstats_heap_released_bytes")
	return nil
}

// metricValue returns the value of an unlabelled metric in Prometheus text
// format, 0 if absent.
func metricValue(text, name string) int64 {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int64(f)
			}
		}
	}
	return 0
}

package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

// fakeMetrics is a MetricsSource holding fixed values; err, when set, is
// returned by every method.
type fakeMetrics struct {
	resource map[corev1.ResourceName]PodMetricsInfo
	pods     map[string]PodMetricsInfo
	object   map[string]int64
	external map[string][]int64
	err      error
	// resourceErr fails resource metrics alone.
	resourceErr error
}

func (f *fakeMetrics) ResourceMetric(_ context.Context, r corev1.ResourceName, _ string, _ labels.Selector, _ string) (PodMetricsInfo, time.Time, error) {
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	if f.resourceErr != nil {
		return nil, time.Time{}, f.resourceErr
	}
	m, ok := f.resource[r]
	if !ok || len(m) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	return copyMetrics(m), t0, nil
}

func (f *fakeMetrics) PodsMetric(_ context.Context, name, _ string, _, _ labels.Selector) (PodMetricsInfo, time.Time, error) {
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	m, ok := f.pods[name]
	if !ok {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	return copyMetrics(m), t0, nil
}

func (f *fakeMetrics) ObjectMetric(_ context.Context, name, _ string, _ *autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	if f.err != nil {
		return 0, time.Time{}, f.err
	}
	v, ok := f.object[name]
	if !ok {
		return 0, time.Time{}, errors.New("not found")
	}
	return v, t0, nil
}

func (f *fakeMetrics) ExternalMetric(_ context.Context, name, _ string, _ labels.Selector) ([]int64, time.Time, error) {
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	v, ok := f.external[name]
	if !ok {
		return nil, time.Time{}, errors.New("no metrics returned from external metrics API")
	}
	return v, t0, nil
}

func copyMetrics(m PodMetricsInfo) PodMetricsInfo {
	out := make(PodMetricsInfo, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// podOpt adjusts a test pod.
type podOpt func(*corev1.Pod)

// testPod is a running, ready pod of app=web started 10 minutes before t0
// (past the CPU initialization period), requesting cpu (milli) and 64Mi.
func testPod(name string, cpuMilli int64, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMilli, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}}}}},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &metav1.Time{Time: t0.Add(-10 * time.Minute)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(t0.Add(-9 * time.Minute))}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }

// startedAgo starts the pod d before t0 and makes it ready (status) at
// readyAgo before t0.
func startedAgo(d, readyAgo time.Duration, status corev1.ConditionStatus) podOpt {
	return func(p *corev1.Pod) {
		p.Status.StartTime = &metav1.Time{Time: t0.Add(-d)}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(t0.Add(-readyAgo))}}
	}
}

// nPods is n test pods p0..p(n-1).
func nPods(n int, cpuMilli int64) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = testPod(fmt.Sprintf("p%d", i), cpuMilli)
	}
	return out
}

// nSamples gives p0..p(n-1) the value v.
func nSamples(n, v int) PodMetricsInfo {
	var kv []any
	for i := range n {
		kv = append(kv, fmt.Sprintf("p%d", i), v)
	}
	return samples(kv...)
}

func noRequest(p *corev1.Pod) { p.Spec.Containers[0].Resources.Requests = nil }

func podLister(t *testing.T, pods ...*corev1.Pod) corelisters.PodLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return corelisters.NewPodLister(idx)
}

// samples are pod → milli-value samples taken at t0 over a 30 s window.
func samples(kv ...any) PodMetricsInfo {
	out := PodMetricsInfo{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = PodMetric{Timestamp: t0, Window: 30 * time.Second, Value: int64(kv[i+1].(int))}
	}
	return out
}

func newCalc(t *testing.T, m *fakeMetrics, pods ...*corev1.Pod) *calculator {
	return &calculator{metrics: m, pods: podLister(t, pods...), clock: clocktesting.NewFakeClock(t0),
		cpuInitialization: 5 * time.Minute, readinessDelay: 30 * time.Second}
}

var web = labels.SelectorFromSet(labels.Set{"app": "web"})

var defaultTol = tolerances{0.1, 0.1}

func TestResourceReplicas(t *testing.T) {
	cases := []struct {
		name      string
		current   int32
		target    int32
		pods      []*corev1.Pod
		cpu       PodMetricsInfo
		tol       tolerances
		container string
		want      int32
		wantUtil  int32
		wantRaw   int64
		wantErr   string
	}{
		{name: "scale up", current: 3, target: 30,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000)},
			cpu:  samples("a", 300, "b", 500, "c", 700), want: 5, wantUtil: 50, wantRaw: 500},
		{name: "scale down", current: 5, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000), testPod("d", 1000), testPod("e", 1000)},
			cpu:  samples("a", 100, "b", 300, "c", 500, "d", 250, "e", 250), want: 3, wantUtil: 28, wantRaw: 280},
		{name: "within tolerance keeps current", current: 3, target: 100,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000)},
			cpu:  samples("a", 1010, "b", 1030, "c", 1020), want: 3, wantUtil: 102, wantRaw: 1020},
		{name: "wider scale-up tolerance keeps current", current: 3, target: 100, tol: tolerances{0.1, 0.5},
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000)},
			cpu:  samples("a", 1400, "b", 1400, "c", 1400), want: 3, wantUtil: 140, wantRaw: 1400},
		{name: "default tolerance keeps current at 90%", current: 10, target: 100,
			pods: nPods(10, 1000), cpu: nSamples(10, 900), want: 10, wantUtil: 90, wantRaw: 900},
		{name: "narrower scale-down tolerance acts on 90%", current: 10, target: 100, tol: tolerances{0.05, 0.1},
			pods: nPods(10, 1000), cpu: nSamples(10, 900), want: 9, wantUtil: 90, wantRaw: 900},
		{name: "missing pods count 0% on scale-up", current: 4, target: 30,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000), testPod("d", 1000)},
			cpu:  samples("a", 300, "b", 500, "c", 700), want: 5, wantUtil: 50, wantRaw: 500},
		{name: "missing pods count 100% on scale-down", current: 4, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000), testPod("d", 1000)},
			cpu:  samples("a", 100, "b", 100, "c", 100), want: 3, wantUtil: 10, wantRaw: 100},
		{name: "missing pods that reverse the direction keep current", current: 4, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000), testPod("d", 1000)},
			cpu:  samples("a", 400, "b", 400, "c", 300), want: 4, wantUtil: 36, wantRaw: 366},
		{name: "pending pod counts 0% on scale-up", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, phase(corev1.PodPending))},
			cpu:  samples("a", 1000, "b", 1000, "c", 5000), want: 4, wantUtil: 100, wantRaw: 1000},
		{name: "unready pod ignored on scale-down", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, phase(corev1.PodPending))},
			cpu:  samples("a", 100, "b", 100), want: 1, wantUtil: 10, wantRaw: 100},
		{name: "sample predating readiness within cpu initialization is unready", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, startedAgo(time.Minute, 10*time.Second, corev1.ConditionTrue))},
			cpu:  samples("a", 1000, "b", 1000, "c", 3000), want: 4, wantUtil: 100, wantRaw: 1000},
		{name: "ready a window before the sample within cpu initialization counts", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, startedAgo(time.Minute, 50*time.Second, corev1.ConditionTrue))},
			cpu:  samples("a", 1000, "b", 1000, "c", 1000), want: 6, wantUtil: 100, wantRaw: 1000},
		{name: "never ready after cpu initialization is unready", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, startedAgo(10*time.Minute, 10*time.Minute-10*time.Second, corev1.ConditionFalse))},
			cpu:  samples("a", 1000, "b", 1000, "c", 0), want: 4, wantUtil: 100, wantRaw: 1000},
		{name: "once-ready now unready after cpu initialization counts", current: 3, target: 50,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, startedAgo(10*time.Minute, time.Minute, corev1.ConditionFalse))},
			cpu:  samples("a", 1000, "b", 1000, "c", 1000), want: 6, wantUtil: 100, wantRaw: 1000},
		{name: "deleted and failed pods are ignored", current: 4, target: 20,
			pods: []*corev1.Pod{testPod("a", 1000), testPod("b", 1000), testPod("c", 1000, deleting), testPod("d", 1000, phase(corev1.PodFailed))},
			cpu:  samples("a", 500, "b", 500, "c", 0, "d", 0), want: 5, wantUtil: 50, wantRaw: 500},
		{name: "missing request", current: 2, target: 50,
			pods:    []*corev1.Pod{testPod("a", 1000), testPod("b", 1000, noRequest)},
			cpu:     samples("a", 500, "b", 500),
			wantErr: "missing request for cpu in container c of Pod b"},
		{name: "no pods", current: 2, target: 50, cpu: samples("a", 500),
			wantErr: "no pods returned by selector while calculating replica count"},
		{name: "only unready pods", current: 1, target: 50,
			pods:    []*corev1.Pod{testPod("a", 1000, phase(corev1.PodPending))},
			cpu:     samples("a", 500),
			wantErr: "did not receive metrics for targeted pods (pods might be unready)"},
		{name: "no metrics", current: 1, target: 50, pods: []*corev1.Pod{testPod("a", 1000)},
			wantErr: "unable to get metrics for resource cpu: no metrics returned from resource metrics API"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalc(t, &fakeMetrics{resource: map[corev1.ResourceName]PodMetricsInfo{corev1.ResourceCPU: tc.cpu}}, tc.pods...)
			tol := tc.tol
			if tol == (tolerances{}) {
				tol = defaultTol
			}
			got, util, raw, _, err := c.resourceReplicas(context.Background(), tc.current, tc.target, corev1.ResourceCPU, tol, "default", web, tc.container)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || util != tc.wantUtil || raw != tc.wantRaw {
				t.Errorf("got %d replicas, %d%%, raw %d; want %d, %d%%, %d", got, util, raw, tc.want, tc.wantUtil, tc.wantRaw)
			}
		})
	}
}

// TestMemoryIgnoresReadiness: the initialization rules are CPU's alone.
func TestMemoryIgnoresReadiness(t *testing.T) {
	pods := []*corev1.Pod{testPod("a", 1000), testPod("b", 1000, startedAgo(time.Minute, 10*time.Second, corev1.ConditionTrue))}
	mem := samples("a", 64<<20*1000, "b", 64<<20*1000*3)
	c := newCalc(t, &fakeMetrics{resource: map[corev1.ResourceName]PodMetricsInfo{corev1.ResourceMemory: mem}}, pods...)
	got, util, _, _, err := c.resourceReplicas(context.Background(), 2, 100, corev1.ResourceMemory, defaultTol, "default", web, "")
	if err != nil {
		t.Fatal(err)
	}
	if got != 4 || util != 200 {
		t.Errorf("got %d replicas at %d%%, want 4 at 200%%", got, util)
	}
}

func TestPlainReplicas(t *testing.T) {
	cases := []struct {
		name    string
		current int32
		target  int64
		pods    []*corev1.Pod
		qps     PodMetricsInfo
		want    int32
		wantAvg int64
	}{
		{name: "scale up", current: 3, target: 10000,
			pods: []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1)},
			qps:  samples("a", 20000, "b", 10000, "c", 30000), want: 6, wantAvg: 20000},
		{name: "tolerance", current: 3, target: 10000,
			pods: []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1)},
			qps:  samples("a", 10500, "b", 10000, "c", 10000), want: 3, wantAvg: 10166},
		{name: "missing pods count the target on scale-down", current: 4, target: 10000,
			pods: []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1), testPod("d", 1)},
			qps:  samples("a", 1000, "b", 1000, "c", 1000), want: 2, wantAvg: 1000},
		{name: "missing pods count zero on scale-up", current: 4, target: 10000,
			pods: []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1), testPod("d", 1)},
			qps:  samples("a", 30000, "b", 30000, "c", 30000), want: 9, wantAvg: 30000},
		// Unready (pending) pods only matter on a scale-up; a non-CPU
		// metric does not apply the CPU readiness rules.
		{name: "pending counts zero on scale-up", current: 3, target: 10000,
			pods: []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1, phase(corev1.PodPending))},
			qps:  samples("a", 20000, "b", 20000), want: 4, wantAvg: 20000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalc(t, &fakeMetrics{pods: map[string]PodMetricsInfo{"qps": tc.qps}}, tc.pods...)
			got, avg, _, err := c.podsReplicas(context.Background(), tc.current, tc.target, "qps", defaultTol, "default", web, labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || avg != tc.wantAvg {
				t.Errorf("got %d replicas avg %d, want %d avg %d", got, avg, tc.want, tc.wantAvg)
			}
		})
	}
}

func TestObjectAndExternalReplicas(t *testing.T) {
	pods := []*corev1.Pod{testPod("a", 1), testPod("b", 1), testPod("c", 1, phase(corev1.PodPending))}
	m := &fakeMetrics{object: map[string]int64{"rps": 5000}, external: map[string][]int64{"queue": {3000, 3000}}}
	c := newCalc(t, m, pods...)
	ref := &autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: "web"}
	ctx := context.Background()
	cases := []struct {
		name    string
		run     func() (int32, int64, error)
		want    int32
		wantUse int64
	}{
		// ratio 5000/1000 = 5 over 2 ready pods.
		{name: "object value", run: func() (int32, int64, error) {
			n, u, _, err := c.objectReplicas(ctx, 3, 1000, "rps", defaultTol, "default", ref, web, labels.Everything())
			return n, u, err
		}, want: 10, wantUse: 5000},
		{name: "object value from zero replicas", run: func() (int32, int64, error) {
			n, u, _, err := c.objectReplicas(ctx, 0, 2000, "rps", defaultTol, "default", ref, web, labels.Everything())
			return n, u, err
		}, want: 3, wantUse: 5000},
		{name: "object average value", run: func() (int32, int64, error) {
			n, u, _, err := c.objectPerPodReplicas(ctx, 2, 1000, "rps", defaultTol, "default", ref, labels.Everything())
			return n, u, err
		}, want: 5, wantUse: 2500},
		{name: "external value", run: func() (int32, int64, error) {
			n, u, _, err := c.externalReplicas(ctx, 2, 3000, "queue", defaultTol, "default", nil, web)
			return n, u, err
		}, want: 4, wantUse: 6000},
		{name: "external average value within tolerance", run: func() (int32, int64, error) {
			n, u, _, err := c.externalPerPodReplicas(ctx, 3, 2000, "queue", defaultTol, "default", nil)
			return n, u, err
		}, want: 3, wantUse: 2000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, u, err := tc.run()
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.want || u != tc.wantUse {
				t.Errorf("got %d replicas usage %d, want %d usage %d", n, u, tc.want, tc.wantUse)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	p := testPod("a", 100)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "d", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}})
	p.Spec.InitContainers = []corev1.Container{
		{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}}},
		{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}}},
	}
	podLevel := testPod("b", 100)
	podLevel.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	for _, tc := range []struct {
		container string
		want      map[string]int64
	}{
		{"", map[string]int64{"a": 350, "b": 1000}},
		{"d", map[string]int64{"a": 200, "b": 0}},
	} {
		t.Run(fmt.Sprintf("container %q", tc.container), func(t *testing.T) {
			got, err := podRequests([]*corev1.Pod{p, podLevel}, tc.container, corev1.ResourceCPU)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("requests %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := podRequests([]*corev1.Pod{testPod("c", 1, noRequest)}, "", corev1.ResourceCPU); err == nil || !strings.Contains(err.Error(), "missing request") {
		t.Errorf("err %v", err)
	}
}

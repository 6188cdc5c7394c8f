package podautoscaler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	fakemetrics "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
	"github.com/myriad-k8s/myriad/internal/controllers/podcontrol/podcontroltest"
)

// scales is a scale subresource store behind a fake scale client.
type scales struct {
	mu      sync.Mutex
	m       map[string]*autoscalingv1.Scale // resource/name
	updates []int32
	getErr  error
}

func (s *scales) client() *fakescale.FakeScaleClient {
	c := &fakescale.FakeScaleClient{}
	c.AddReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		ga := a.(k8stesting.GetAction)
		if s.getErr != nil {
			return true, nil, s.getErr
		}
		sc, ok := s.m[a.GetResource().Resource+"/"+ga.GetName()]
		if !ok {
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), ga.GetName())
		}
		return true, sc.DeepCopy(), nil
	})
	c.AddReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		s.m[a.GetResource().Resource+"/"+sc.Name] = sc.DeepCopy()
		s.updates = append(s.updates, sc.Spec.Replicas)
		return true, sc, nil
	})
	return c
}

func deploymentScale(replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: "app=web"},
	}
}

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	return m
}

// noMetricsAPI is the error client-go returns for a List of a group the
// server does not serve (a 404 without a Status body).
var noMetricsAPI = apierrors.NewGenericServerResponse(404, "get", schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}, "", "", 0, true)

// podMetricsSource is RESTMetrics on a fake metrics clientset answering
// PodMetrics lists with items, or err.
func podMetricsSource(items []metricsv1beta1.PodMetrics, err error) *RESTMetrics {
	c := fakemetrics.NewSimpleClientset()
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if err != nil {
			return true, nil, err
		}
		return true, &metricsv1beta1.PodMetricsList{Items: items}, nil
	})
	return &RESTMetrics{Resource: c.MetricsV1beta1()}
}

func podUsage(name, cpu string) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Timestamp:  metav1.NewTime(t0),
		Window:     metav1.Duration{Duration: 30 * time.Second},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "c", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}},
	}
}

func cpuHPA(minR, maxR, util int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 2},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minR, MaxReplicas: maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util}}}},
		},
	}
}

type harness struct {
	hc     *Controller
	client *fake.Clientset
	scales *scales
	events *record.FakeRecorder
	clk    *clocktesting.FakeClock
	ctx    *controllerctx.Context
}

func newControllerHarness(t *testing.T, sc *scales, m MetricsSource, objs ...runtime.Object) *harness {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	build := func(c *controllerctx.Context) (*Controller, error) {
		return New(c, Options{Scales: sc.client(), Mapper: testMapper(), Metrics: m})
	}
	hc, client, c := podcontroltest.Harness(t, clk, build, objs...)
	events := record.NewFakeRecorder(100)
	hc.recorder = events
	return &harness{hc: hc, client: client, scales: sc, events: events, clk: clk, ctx: c}
}

func (h *harness) hpa(t *testing.T) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	got, err := h.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func drain(ch chan string) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			out = append(out, e)
		default:
			return out
		}
	}
}

type wantCond struct {
	t       autoscalingv2.HorizontalPodAutoscalerConditionType
	status  corev1.ConditionStatus
	reason  string
	message string // exact, when set
}

func TestReconcile(t *testing.T) {
	webPods := []runtime.Object{testPod("a", 100), testPod("b", 100)}
	cases := []struct {
		name         string
		hpa          *autoscalingv2.HorizontalPodAutoscaler
		replicas     int32
		metrics      MetricsSource
		scaleErr     error
		wantUpdates  []int32
		wantCurrent  int32
		wantDesired  int32
		wantScaled   bool
		wantErr      bool
		wantConds    []wantCond
		absentConds  []autoscalingv2.HorizontalPodAutoscalerConditionType
		wantEvents   []string
		wantMetricCU *int32 // current utilization reported
	}{
		{name: "below min scales to min without metrics", hpa: cpuHPA(3, 5, 50), replicas: 1,
			metrics: podMetricsSource(nil, noMetricsAPI), wantUpdates: []int32{3}, wantCurrent: 1, wantDesired: 3, wantScaled: true,
			wantConds: []wantCond{{t: autoscalingv2.AbleToScale, status: corev1.ConditionTrue, reason: "SucceededRescale",
				message: "the HPA controller was able to update the target scale to 3"}},
			absentConds: []autoscalingv2.HorizontalPodAutoscalerConditionType{autoscalingv2.ScalingActive},
			wantEvents:  []string{"Normal SuccessfulRescale New size: 3; reason: Current number of replicas below Spec.MinReplicas"}},
		{name: "above max scales to max", hpa: cpuHPA(1, 5, 50), replicas: 7,
			metrics: podMetricsSource(nil, noMetricsAPI), wantUpdates: []int32{5}, wantCurrent: 7, wantDesired: 5, wantScaled: true,
			wantEvents: []string{"Normal SuccessfulRescale New size: 5; reason: Current number of replicas above Spec.MaxReplicas"}},
		{name: "no metrics API", hpa: cpuHPA(2, 5, 50), replicas: 2,
			metrics: podMetricsSource(nil, noMetricsAPI), wantCurrent: 2, wantDesired: 0, wantErr: true,
			wantConds: []wantCond{
				{t: autoscalingv2.AbleToScale, status: corev1.ConditionTrue, reason: "SucceededGetScale"},
				{t: autoscalingv2.ScalingActive, status: corev1.ConditionFalse, reason: "FailedGetResourceMetric",
					message: "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"},
			},
			wantEvents: []string{
				"Warning FailedGetResourceMetric failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)",
				"Warning FailedComputeMetricsReplicas invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)",
			}},
		{name: "utilization above target scales up, limited to double", hpa: cpuHPA(1, 10, 50), replicas: 2,
			metrics:     podMetricsSource([]metricsv1beta1.PodMetrics{podUsage("a", "200m"), podUsage("b", "200m")}, nil),
			wantUpdates: []int32{4}, wantCurrent: 2, wantDesired: 4, wantScaled: true, wantMetricCU: ptr.To(int32(200)),
			wantConds: []wantCond{
				{t: autoscalingv2.ScalingActive, status: corev1.ConditionTrue, reason: "ValidMetricFound",
					message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"},
				{t: autoscalingv2.ScalingLimited, status: corev1.ConditionTrue, reason: "ScaleUpLimit"},
				{t: autoscalingv2.AbleToScale, status: corev1.ConditionTrue, reason: "SucceededRescale"},
			},
			wantEvents: []string{"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"}},
		{name: "utilization at target keeps replicas", hpa: cpuHPA(1, 10, 50), replicas: 2,
			metrics:     podMetricsSource([]metricsv1beta1.PodMetrics{podUsage("a", "50m"), podUsage("b", "52m")}, nil),
			wantCurrent: 2, wantDesired: 2, wantMetricCU: ptr.To(int32(51)),
			wantConds: []wantCond{
				{t: autoscalingv2.AbleToScale, status: corev1.ConditionTrue, reason: "ReadyForNewScale"},
				{t: autoscalingv2.ScalingLimited, status: corev1.ConditionFalse, reason: "DesiredWithinRange"},
			}},
		{name: "target scaled to zero disables autoscaling", hpa: cpuHPA(1, 10, 50), replicas: 0,
			metrics: podMetricsSource(nil, noMetricsAPI), wantCurrent: 0, wantDesired: 0,
			wantConds: []wantCond{{t: autoscalingv2.ScalingActive, status: corev1.ConditionFalse, reason: "ScalingDisabled",
				message: "scaling is disabled since the replica count of the target is zero"}}},
		{name: "missing target", hpa: cpuHPA(1, 10, 50), replicas: -1,
			metrics: podMetricsSource(nil, noMetricsAPI), wantErr: true,
			wantConds: []wantCond{{t: autoscalingv2.AbleToScale, status: corev1.ConditionFalse, reason: "FailedGetScale",
				message: `the HPA controller was unable to get the target's current scale: deployments.apps "web" not found`}},
			wantEvents: []string{`Warning FailedGetScale deployments.apps "web" not found`}},
		{name: "unknown kind", hpa: func() *autoscalingv2.HorizontalPodAutoscaler {
			h := cpuHPA(1, 10, 50)
			h.Spec.ScaleTargetRef.Kind = "Gizmo"
			return h
		}(), replicas: 2, metrics: podMetricsSource(nil, noMetricsAPI), wantErr: true,
			wantConds: []wantCond{{t: autoscalingv2.AbleToScale, status: corev1.ConditionFalse, reason: "FailedGetScale"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scales{m: map[string]*autoscalingv1.Scale{}}
			if tc.replicas >= 0 {
				sc.m["deployments/web"] = deploymentScale(tc.replicas)
			}
			h := newControllerHarness(t, sc, tc.metrics, append([]runtime.Object{tc.hpa}, webPods...)...)
			err := h.hc.sync(context.Background(), "default/web")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want error %v", err, tc.wantErr)
			}
			if got := sc.updates; len(got) != len(tc.wantUpdates) || (len(got) > 0 && got[0] != tc.wantUpdates[0]) {
				t.Errorf("scale updates %v, want %v", got, tc.wantUpdates)
			}
			got := h.hpa(t)
			st := got.Status
			if st.CurrentReplicas != tc.wantCurrent || st.DesiredReplicas != tc.wantDesired {
				t.Errorf("status current %d desired %d, want %d %d", st.CurrentReplicas, st.DesiredReplicas, tc.wantCurrent, tc.wantDesired)
			}
			if (st.LastScaleTime != nil) != tc.wantScaled {
				t.Errorf("lastScaleTime %v, want set %v", st.LastScaleTime, tc.wantScaled)
			}
			if st.ObservedGeneration == nil || *st.ObservedGeneration != 2 {
				t.Errorf("observedGeneration %v, want 2", st.ObservedGeneration)
			}
			for _, w := range tc.wantConds {
				c := condition(got, w.t)
				if c == nil || c.Status != w.status || c.Reason != w.reason || (w.message != "" && c.Message != w.message) {
					t.Errorf("condition %s = %+v, want %s/%s %q", w.t, c, w.status, w.reason, w.message)
				}
			}
			for _, a := range tc.absentConds {
				if c := condition(got, a); c != nil {
					t.Errorf("unexpected condition %+v", c)
				}
			}
			if tc.wantMetricCU != nil {
				if len(st.CurrentMetrics) != 1 || st.CurrentMetrics[0].Resource == nil || st.CurrentMetrics[0].Resource.Current.AverageUtilization == nil ||
					*st.CurrentMetrics[0].Resource.Current.AverageUtilization != *tc.wantMetricCU {
					t.Errorf("currentMetrics %+v, want utilization %d", st.CurrentMetrics, *tc.wantMetricCU)
				}
			}
			events := drain(h.events.Events)
			if tc.wantEvents != nil && strings.Join(events, "\n") != strings.Join(tc.wantEvents, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(events, "\n"), strings.Join(tc.wantEvents, "\n"))
			}
		})
	}
}

// TestResync: a synced HPA comes back after the sync period, and only then;
// a deleted one is forgotten.
func TestResync(t *testing.T) {
	sc := &scales{m: map[string]*autoscalingv1.Scale{"deployments/web": deploymentScale(2)}}
	h := newControllerHarness(t, sc, podMetricsSource([]metricsv1beta1.PodMetrics{podUsage("a", "50m"), podUsage("b", "50m")}, nil),
		cpuHPA(1, 10, 50), testPod("a", 100), testPod("b", 100))
	// The delaying queue's loop arms a timer on the fake clock for the
	// period after it reads the clock; stepping between those two moves the
	// timer a whole step later. Step only once the timer is armed.
	waiters := h.clk.Waiters()
	if err := h.hc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resync timer armed", func() bool { return h.clk.Waiters() > waiters })
	h.clk.Step(14 * time.Second)
	if n := h.hc.Queue.Len(); n != 0 {
		t.Fatalf("queued after 14s: %d", n)
	}
	// The queue's 10 s heartbeat fired in that step: its loop re-arms the
	// timer from a clock reading that the next step may overtake, which
	// moves the timer by that step. So the item is due at 15 s, or at 16 s
	// when the loop lost that race, never earlier and never later.
	h.clk.Step(time.Second)
	queued := func() bool { return h.hc.Queue.Len() == 1 }
	if !poll(time.Second, queued) {
		h.clk.Step(time.Second)
		waitFor(t, "queued a second after the sync period", queued)
	}
	if len(h.hc.history.mu.recommendations) != 1 {
		t.Fatalf("history %v", h.hc.history.mu.recommendations)
	}
	// Deleted: the cache no longer has it.
	if err := h.ctx.Informers.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Delete(cpuHPA(1, 10, 50)); err != nil {
		t.Fatal(err)
	}
	if err := h.hc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(h.hc.history.mu.recommendations) != 0 {
		t.Errorf("history kept after delete: %v", h.hc.history.mu.recommendations)
	}
}

// TestScaleDownStabilizedAcrossSyncs: without a behavior a scale-down waits
// for the 5-minute window of recommendations, then happens.
func TestScaleDownStabilizedAcrossSyncs(t *testing.T) {
	sc := &scales{m: map[string]*autoscalingv1.Scale{"deployments/web": deploymentScale(4)}}
	pods := []runtime.Object{cpuHPA(1, 10, 50), testPod("a", 100), testPod("b", 100), testPod("c", 100), testPod("d", 100)}
	low := []metricsv1beta1.PodMetrics{podUsage("a", "10m"), podUsage("b", "10m"), podUsage("c", "10m"), podUsage("d", "10m")}
	h := newControllerHarness(t, sc, podMetricsSource(low, nil), pods...)
	for i := 0; i < 20; i++ { // 20 × 15 s = 5 min
		if err := h.hc.sync(context.Background(), "default/web"); err != nil {
			t.Fatal(err)
		}
		if len(sc.updates) != 0 {
			t.Fatalf("scaled at sync %d (after %v): %v", i, time.Duration(i)*15*time.Second, sc.updates)
		}
		h.clk.Step(15 * time.Second)
	}
	h.clk.Step(time.Second)
	if err := h.hc.sync(context.Background(), "default/web"); err != nil {
		t.Fatal(err)
	}
	if len(sc.updates) != 1 || sc.updates[0] != 1 {
		t.Fatalf("updates %v, want [1] once the window passed", sc.updates)
	}
	if c := condition(h.hpa(t), autoscalingv2.AbleToScale); c.Reason != "SucceededRescale" {
		t.Errorf("AbleToScale %+v", c)
	}
}

// TestAmbiguousSelector: two HPAs over the same pods both stop.
func TestAmbiguousSelector(t *testing.T) {
	other := cpuHPA(1, 10, 50)
	other.Name = "other"
	sc := &scales{m: map[string]*autoscalingv1.Scale{"deployments/web": deploymentScale(2)}}
	h := newControllerHarness(t, sc, podMetricsSource([]metricsv1beta1.PodMetrics{podUsage("a", "50m"), podUsage("b", "50m")}, nil),
		cpuHPA(1, 10, 50), other, testPod("a", 100), testPod("b", 100))
	for _, key := range []string{"default/web", "default/other"} {
		_ = h.hc.sync(context.Background(), key)
	}
	got, err := h.client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(context.Background(), "other", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := condition(got, autoscalingv2.ScalingActive)
	if c == nil || c.Reason != "AmbiguousSelector" || !strings.Contains(c.Message, "controlled by multiple HPAs: [default/other default/web]") {
		t.Errorf("ScalingActive %+v", c)
	}
}

func withPodsMetric(h *autoscalingv2.HorizontalPodAutoscaler, name, avg string) *autoscalingv2.HorizontalPodAutoscaler {
	q := resource.MustParse(avg)
	h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}})
	return h
}

func withExternalMetric(h *autoscalingv2.HorizontalPodAutoscaler, name, value string) *autoscalingv2.HorizontalPodAutoscaler {
	q := resource.MustParse(value)
	h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: name},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q}}})
	return h
}

// TestMultipleMetrics: the highest proposal wins; a failed metric blocks a
// scale-down (it might have wanted more) but not a scale-up.
func TestMultipleMetrics(t *testing.T) {
	cpu := func(v int) PodMetricsInfo { return samples("a", v, "b", v) }
	cases := []struct {
		name        string
		hpa         *autoscalingv2.HorizontalPodAutoscaler
		metrics     *fakeMetrics
		wantUpdate  int32 // 0: none
		wantErr     bool
		wantActive  corev1.ConditionStatus
		wantReason  string
		wantMessage string
		wantStatus  int // currentMetrics entries with a value
	}{
		{name: "highest of three wins", hpa: withExternalMetric(withPodsMetric(cpuHPA(1, 10, 50), "qps", "10"), "queue", "30"),
			metrics: &fakeMetrics{
				resource: map[corev1.ResourceName]PodMetricsInfo{corev1.ResourceCPU: cpu(60)}, // 60%: 3
				pods:     map[string]PodMetricsInfo{"qps": samples("a", 15000, "b", 15000)},   // 1.5: 3
				external: map[string][]int64{"queue": {60000, 30000}},                         // 3: 6 → limited to 4
			},
			wantUpdate: 4, wantActive: corev1.ConditionTrue, wantReason: "ValidMetricFound",
			wantMessage: "the HPA was able to successfully calculate a replica count from external metric queue(nil)", wantStatus: 3},
		{name: "failed metric does not block a scale-up", hpa: withPodsMetric(cpuHPA(1, 10, 50), "qps", "10"),
			metrics:    &fakeMetrics{resourceErr: errors.New("boom"), pods: map[string]PodMetricsInfo{"qps": samples("a", 20000, "b", 20000)}},
			wantUpdate: 4, wantErr: true, wantActive: corev1.ConditionTrue, wantReason: "ValidMetricFound",
			wantMessage: "the HPA was able to successfully calculate a replica count from pods metric qps", wantStatus: 1},
		{name: "failed metric blocks a scale-down", hpa: withPodsMetric(cpuHPA(1, 10, 50), "qps", "10"),
			metrics: &fakeMetrics{resourceErr: errors.New("boom"), pods: map[string]PodMetricsInfo{"qps": samples("a", 1000, "b", 1000)}},
			wantErr: true, wantActive: corev1.ConditionFalse, wantReason: "FailedGetResourceMetric",
			wantMessage: "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: boom", wantStatus: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scales{m: map[string]*autoscalingv1.Scale{"deployments/web": deploymentScale(2)}}
			h := newControllerHarness(t, sc, tc.metrics, tc.hpa, testPod("a", 100), testPod("b", 100))
			err := h.hc.sync(context.Background(), "default/web")
			if (err != nil) != tc.wantErr {
				t.Fatalf("sync: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantUpdate == 0 && len(sc.updates) != 0 || tc.wantUpdate != 0 && (len(sc.updates) != 1 || sc.updates[0] != tc.wantUpdate) {
				t.Errorf("updates %v, want %d", sc.updates, tc.wantUpdate)
			}
			got := h.hpa(t)
			c := condition(got, autoscalingv2.ScalingActive)
			if c == nil || c.Status != tc.wantActive || c.Reason != tc.wantReason || c.Message != tc.wantMessage {
				t.Errorf("ScalingActive %+v, want %s %s %q", c, tc.wantActive, tc.wantReason, tc.wantMessage)
			}
			n := 0
			for _, m := range got.Status.CurrentMetrics {
				if m.Type != "" {
					n++
				}
			}
			if n != tc.wantStatus {
				t.Errorf("currentMetrics %+v, want %d filled", got.Status.CurrentMetrics, tc.wantStatus)
			}
		})
	}
}

// resettingMapper counts Resets.
type resettingMapper struct {
	meta.RESTMapper
	resets chan struct{}
}

func (m *resettingMapper) Reset() { m.resets <- struct{}{} }

// TestRunSyncsAndRefreshesMapper runs the controller: the HPA is synced a
// sync period after the informer delivers it, the RESTMapper is reset every
// 30 s, and Run returns (joining its goroutines) when ctx ends.
func TestRunSyncsAndRefreshesMapper(t *testing.T) {
	sc := &scales{m: map[string]*autoscalingv1.Scale{"deployments/web": deploymentScale(1)}}
	clk := clocktesting.NewFakeClock(t0)
	client := podcontroltest.NewClientset(clk, cpuHPA(2, 5, 50))
	c := podcontroltest.NewContext(client, clk)
	mapper := &resettingMapper{RESTMapper: testMapper(), resets: make(chan struct{}, 10)}
	hc, err := New(c, Options{Scales: sc.client(), Mapper: mapper, Metrics: &fakeMetrics{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.Informers.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hc.Run(ctx, 2)
	}()
	defer func() {
		cancel()
		<-done
		c.Informers.Shutdown()
	}()
	// Step the clock a sync period at a time until the HPA's sync (queued
	// by the informer's add) rescales; later syncs find it at the minimum.
	updates := func() []int32 {
		sc.mu.Lock()
		defer sc.mu.Unlock()
		return append([]int32(nil), sc.updates...)
	}
	for deadline := time.Now().Add(10 * time.Second); len(updates()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no rescale within 10 s")
		}
		clk.Step(15 * time.Second)
		time.Sleep(5 * time.Millisecond)
	}
	clk.Step(30 * time.Second)
	time.Sleep(5 * time.Millisecond)
	if got := updates(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("scale updates %v, want [2] (below min)", got)
	}
	select {
	case <-mapper.resets:
	case <-time.After(5 * time.Second):
		t.Fatal("mapper not reset after 30 s")
	}
}

// waitFor polls cond in real time: the queue's goroutine reacts to the fake
// clock asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !poll(10*time.Second, cond) {
		t.Fatalf("not %s within 10 s", what)
	}
}

// poll reports whether cond held within timeout of real time.
func poll(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return false
		}
	}
	return true
}

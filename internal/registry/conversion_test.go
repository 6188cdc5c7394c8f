package registry

import (
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/randfill"
)

// filler fills API objects with random values in the shapes the API can
// hold: quantities and times as they serialize (the round-trip annotations
// are JSON), and HPA metrics with exactly the source their type names and
// the targets v2 validation allows.
func filler(seed int64) *randfill.Filler {
	return randfill.NewWithSeed(seed).NilChance(0.2).NumElements(0, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(100000)+1, resource.DecimalSI)
		},
		func(t *metav1.Time, c randfill.Continue) { *t = metav1.Unix(c.Int63n(2e9), 0).Rfc3339Copy() },
		func(t *metav1.MicroTime, c randfill.Continue) {
			*t = metav1.NewMicroTime(time.Unix(c.Int63n(2e9), c.Int63n(1e6)*1000))
		},
		func(m *autoscalingv2.MetricSpec, c randfill.Continue) { *m = randomMetricSpec(c) },
		func(m *autoscalingv2.MetricStatus, c randfill.Continue) { *m = randomMetricStatus(c) },
	)
}

func randomQuantity(c randfill.Continue) *resource.Quantity {
	q := resource.NewQuantity(c.Int63n(100000)+1, resource.DecimalSI)
	return q
}

func randomIdentifier(c randfill.Continue) autoscalingv2.MetricIdentifier {
	id := autoscalingv2.MetricIdentifier{Name: c.String(10)}
	if c.Bool() {
		id.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{c.String(5): c.String(5)}}
	}
	return id
}

func randomMetricSpec(c randfill.Continue) autoscalingv2.MetricSpec {
	var m autoscalingv2.MetricSpec
	resourceTarget := func() autoscalingv2.MetricTarget {
		if c.Bool() {
			u := c.Int31n(200) + 1
			return autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &u}
		}
		return autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: randomQuantity(c)}
	}
	switch c.Intn(5) {
	case 0:
		// v1 carries an object target's value always (non-pointer).
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: randomQuantity(c)}
		if c.Bool() {
			t.Type, t.AverageValue = autoscalingv2.AverageValueMetricType, randomQuantity(c)
		}
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: c.String(8), APIVersion: "networking.k8s.io/v1"},
			Metric:          randomIdentifier(c), Target: t,
		}}
	case 1:
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: randomIdentifier(c), Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: randomQuantity(c)},
		}}
	case 2:
		name := corev1.ResourceMemory
		if c.Bool() {
			name = corev1.ResourceCPU
		}
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: name, Target: resourceTarget()}}
	case 3:
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
			Name: corev1.ResourceCPU, Container: c.String(6), Target: resourceTarget(),
		}}
	default:
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: randomQuantity(c)}
		if c.Bool() {
			t = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: randomQuantity(c)}
		}
		m = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: randomIdentifier(c), Target: t}}
	}
	return m
}

// randomMetricStatus sets the values v1's status types always carry.
func randomMetricStatus(c randfill.Continue) autoscalingv2.MetricStatus {
	var util *int32
	if c.Bool() {
		u := c.Int31n(200)
		util = &u
	}
	switch c.Intn(5) {
	case 0:
		var avg *resource.Quantity
		if c.Bool() {
			avg = randomQuantity(c)
		}
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Service", Name: c.String(8)},
			Metric:          randomIdentifier(c), Current: autoscalingv2.MetricValueStatus{Value: randomQuantity(c), AverageValue: avg},
		}}
	case 1:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric: randomIdentifier(c), Current: autoscalingv2.MetricValueStatus{AverageValue: randomQuantity(c)},
		}}
	case 2:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageValue: randomQuantity(c), AverageUtilization: util},
		}}
	case 3:
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: corev1.ResourceMemory, Container: c.String(5), Current: autoscalingv2.MetricValueStatus{AverageValue: randomQuantity(c), AverageUtilization: util},
		}}
	default:
		var avg *resource.Quantity
		if c.Bool() {
			avg = randomQuantity(c)
		}
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: randomIdentifier(c), Current: autoscalingv2.MetricValueStatus{Value: randomQuantity(c), AverageValue: avg},
		}}
	}
}

// normalizeV2 puts a filled v2 HPA in the form a v1 round trip keeps: at
// least one metric (v1 defaults an empty list), one CPU utilization metric
// at most and last (v1 holds it in its own field and appends it after the
// others, as upstream), and no annotations of the conversion's own.
func normalizeV2(h *autoscalingv2.HorizontalPodAutoscaler) {
	for _, k := range hpaRoundTripAnnotations {
		delete(h.Annotations, k)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)}
	}
	var rest, cpu []autoscalingv2.MetricSpec
	for _, m := range h.Spec.Metrics {
		switch {
		case !isCPUUtilization(m):
			rest = append(rest, m)
		case len(cpu) == 0:
			cpu = append(cpu, m)
		default:
			// A second CPU utilization target (invalid) stays in the
			// annotation in place; keep this test to one.
			m.Resource.Name = corev1.ResourceMemory
			rest = append(rest, m)
		}
	}
	h.Spec.Metrics = append(rest, cpu...)
}

func TestConversionRoundTrip(t *testing.T) {
	const rounds = 300
	t.Run("core/v1 and events.k8s.io/v1 events", func(t *testing.T) {
		for i := int64(0); i < rounds; i++ {
			f := filler(i)
			var core corev1.Event
			f.Fill(&core)
			core.TypeMeta = metav1.TypeMeta{} // the conversion sets the target's own
			var ev eventsv1.Event
			var back corev1.Event
			mustConvert(t, coreEventToEventsV1(&core, &ev))
			mustConvert(t, eventsV1ToCoreEvent(&ev, &back))
			if !apiequality.Semantic.DeepEqual(core, back) {
				t.Fatalf("seed %d: core → events → core changed the event:\n%s", i, diff.Diff(core, back))
			}
			var evIn eventsv1.Event
			f.Fill(&evIn)
			evIn.TypeMeta = metav1.TypeMeta{}
			var mid corev1.Event
			var evBack eventsv1.Event
			mustConvert(t, eventsV1ToCoreEvent(&evIn, &mid))
			mustConvert(t, coreEventToEventsV1(&mid, &evBack))
			if !apiequality.Semantic.DeepEqual(evIn, evBack) {
				t.Fatalf("seed %d: events → core → events changed the event:\n%s", i, diff.Diff(evIn, evBack))
			}
		}
	})
	t.Run("autoscaling/v2 → v1 → v2", func(t *testing.T) {
		for i := int64(0); i < rounds; i++ {
			var in autoscalingv2.HorizontalPodAutoscaler
			filler(i).Fill(&in)
			in.TypeMeta = metav1.TypeMeta{}
			normalizeV2(&in)
			orig := in.DeepCopy()
			var v1 autoscalingv1.HorizontalPodAutoscaler
			var back autoscalingv2.HorizontalPodAutoscaler
			mustConvert(t, hpaV2ToV1(&in, &v1))
			mustConvert(t, hpaV1ToV2(&v1, &back))
			if !apiequality.Semantic.DeepEqual(orig, &in) {
				t.Fatalf("seed %d: the conversion modified its input", i)
			}
			emptyAnnotationsNil(&in.ObjectMeta)
			emptyAnnotationsNil(&back.ObjectMeta)
			if !apiequality.Semantic.DeepEqual(in, back) {
				t.Fatalf("seed %d: v2 → v1 → v2 changed the HPA:\n%s", i, diff.Diff(in, back))
			}
		}
	})
	t.Run("autoscaling/v1 → v2 → v1 → v2", func(t *testing.T) {
		// v1 is the lossy side (a status with only a CPU percentage gains
		// the raw value's zero once it has been v2): after one round trip
		// the object is stable, and v1's own spec survives.
		for i := int64(0); i < rounds; i++ {
			var in autoscalingv1.HorizontalPodAutoscaler
			filler(i).Fill(&in)
			for _, k := range hpaRoundTripAnnotations {
				delete(in.Annotations, k)
			}
			var v2a, v2b, v2c autoscalingv2.HorizontalPodAutoscaler
			var v1a, v1b autoscalingv1.HorizontalPodAutoscaler
			mustConvert(t, hpaV1ToV2(&in, &v2a))
			mustConvert(t, hpaV2ToV1(&v2a, &v1a))
			mustConvert(t, hpaV1ToV2(&v1a, &v2b))
			mustConvert(t, hpaV2ToV1(&v2b, &v1b))
			mustConvert(t, hpaV1ToV2(&v1b, &v2c))
			emptyAnnotationsNil(&v2b.ObjectMeta)
			emptyAnnotationsNil(&v2c.ObjectMeta)
			if !apiequality.Semantic.DeepEqual(v2b, v2c) {
				t.Fatalf("seed %d: not stable after a round trip:\n%s", i, diff.Diff(v2b, v2c))
			}
			want := in.Spec
			if want.TargetCPUUtilizationPercentage == nil {
				p := int32(hpaDefaultCPUUtilization)
				want.TargetCPUUtilizationPercentage = &p
			}
			if !apiequality.Semantic.DeepEqual(want, v1a.Spec) {
				t.Fatalf("seed %d: v1's spec changed:\n%s", i, diff.Diff(want, v1a.Spec))
			}
		}
	})
}

// emptyAnnotationsNil: no annotations serialize alike whether the map is
// nil or empty, and the conversion does not keep the difference.
func emptyAnnotationsNil(m *metav1.ObjectMeta) {
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
}

func mustConvert(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHPAAnnotationErrors: a round-trip annotation that does not decode is
// refused with a 422 on metadata.annotations, never dropped.
func TestHPAAnnotationErrors(t *testing.T) {
	reg := newTestRegistry(t)
	r := mustLookup(t, reg, "autoscaling", "horizontalpodautoscalers")
	for _, key := range hpaRoundTripAnnotations {
		t.Run(key, func(t *testing.T) {
			h := &autoscalingv1.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", Annotations: map[string]string{key: "{not json"}},
				Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "d"}, MaxReplicas: 3},
			}
			r.Strategy.PrepareForCreate(t.Context(), h)
			errs := r.Strategy.Validate(t.Context(), h)
			if len(errs) != 1 || errs[0].Field != "metadata.annotations" || !strings.Contains(errs[0].Detail, key) {
				t.Errorf("errors %v, want one on metadata.annotations naming %s", errs, key)
			}
		})
	}
}

// FuzzHPAV1Annotations: whatever a v1 client puts in the round-trip
// annotations, converting never panics, and what converts is stable.
func FuzzHPAV1Annotations(f *testing.F) {
	f.Add(`[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]`, `[]`, `[{"type":"AbleToScale","status":"True"}]`, `{"scaleUp":{"selectPolicy":"Max"}}`)
	f.Add(`null`, `[{"type":"Resource","resource":{"name":"cpu","currentAverageValue":"1"}}]`, `null`, `{}`)
	f.Add(`[{"type":"Object"}]`, `[{"type":"External","external":{}}]`, `x`, `[`)
	f.Fuzz(func(t *testing.T, metrics, current, conditions, behavior string) {
		in := autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			hpaMetricsAnnotation: metrics, hpaCurrentMetricsAnnotation: current,
			hpaConditionsAnnotation: conditions, hpaBehaviorAnnotation: behavior,
		}}}
		var v2a, v2b autoscalingv2.HorizontalPodAutoscaler
		if err := hpaV1ToV2(&in, &v2a); err != nil {
			return
		}
		var v1 autoscalingv1.HorizontalPodAutoscaler
		if err := hpaV2ToV1(&v2a, &v1); err != nil {
			t.Fatalf("v2 → v1: %v", err)
		}
		if err := hpaV1ToV2(&v1, &v2b); err != nil {
			t.Fatalf("v1 → v2 of a converted object: %v", err)
		}
	})
}

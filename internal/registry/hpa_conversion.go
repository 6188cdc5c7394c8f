package registry

import (
	"encoding/json"
	"fmt"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HorizontalPodAutoscalers are stored in autoscaling/v2. autoscaling/v1
// expresses one metric, a CPU utilization target; everything else a v2
// object holds rides in the annotations upstream uses for it, in the shapes
// upstream writes there (autoscaling/v1's MetricSpec, MetricStatus and
// condition types; v2's behavior), so that a v1 client reading and writing
// an HPA back keeps what a v2 client set, and objects from upstream's
// storage read the same here.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
	// hpaDefaultCPUUtilization is the target an HPA without metrics gets.
	hpaDefaultCPUUtilization = 80
)

var hpaRoundTripAnnotations = []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation}

// isCPUUtilization is the one metric v1's spec expresses itself.
func isCPUUtilization(m autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
		m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

func hpaV2ToV1(in *autoscalingv2.HorizontalPodAutoscaler, out *autoscalingv1.HorizontalPodAutoscaler) error {
	*out = autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	annotations := map[string]string{}
	var other []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				out.Spec.TargetCPUUtilizationPercentage = m.Resource.Target.AverageUtilization
				continue
			}
		}
		other = append(other, metricSpecToV1(m))
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && out.Status.CurrentCPUUtilizationPercentage == nil {
			out.Status.CurrentCPUUtilizationPercentage = m.Resource.Current.AverageUtilization
		}
	}
	if err := setJSONAnnotation(annotations, hpaMetricsAnnotation, len(other) > 0, other); err != nil {
		return err
	}
	// The status is kept whole even when CPU is its only metric: v1's
	// percentage alone loses the raw value.
	current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i, m := range in.Status.CurrentMetrics {
		current[i] = metricStatusToV1(m)
	}
	if err := setJSONAnnotation(annotations, hpaCurrentMetricsAnnotation, len(current) > 0, current); err != nil {
		return err
	}
	conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
	for i, c := range in.Status.Conditions {
		conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
		}
	}
	if err := setJSONAnnotation(annotations, hpaConditionsAnnotation, len(conds) > 0, conds); err != nil {
		return err
	}
	if err := setJSONAnnotation(annotations, hpaBehaviorAnnotation, in.Spec.Behavior != nil, in.Spec.Behavior); err != nil {
		return err
	}
	if len(annotations) > 0 {
		merged := maps.Clone(in.Annotations)
		if merged == nil {
			merged = make(map[string]string, len(annotations))
		}
		maps.Copy(merged, annotations)
		out.Annotations = merged
	}
	return nil
}

func setJSONAnnotation(annotations map[string]string, key string, set bool, v any) error {
	if !set {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", key, err)
	}
	annotations[key] = string(b)
	return nil
}

func hpaV1ToV2(in *autoscalingv1.HorizontalPodAutoscaler, out *autoscalingv2.HorizontalPodAutoscaler) error {
	*out = autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	var other []autoscalingv1.MetricSpec
	if err := getJSONAnnotation(in.Annotations, hpaMetricsAnnotation, &other); err != nil {
		return err
	}
	for _, m := range other {
		out.Spec.Metrics = append(out.Spec.Metrics, metricSpecFromV1(m))
	}
	if t := in.Spec.TargetCPUUtilizationPercentage; t != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, cpuUtilizationMetric(*t))
	}
	if len(out.Spec.Metrics) == 0 {
		// v1's implicit target, made explicit as upstream does.
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(hpaDefaultCPUUtilization)}
	}
	if _, ok := in.Annotations[hpaCurrentMetricsAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if err := getJSONAnnotation(in.Annotations, hpaCurrentMetricsAnnotation, &current); err != nil {
			return err
		}
		for _, m := range current {
			out.Status.CurrentMetrics = append(out.Status.CurrentMetrics, metricStatusFromV1(m))
		}
	} else if u := in.Status.CurrentCPUUtilizationPercentage; u != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: u},
			},
		}}
	}
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	if err := getJSONAnnotation(in.Annotations, hpaConditionsAnnotation, &conds); err != nil {
		return err
	}
	for _, c := range conds {
		out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
			Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message, ObservedGeneration: c.ObservedGeneration,
		})
	}
	if _, ok := in.Annotations[hpaBehaviorAnnotation]; ok {
		out.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		if err := getJSONAnnotation(in.Annotations, hpaBehaviorAnnotation, out.Spec.Behavior); err != nil {
			return err
		}
	}
	out.Annotations = withoutRoundTripAnnotations(in.Annotations)
	return nil
}

// getJSONAnnotation decodes annotation key into v when present. A value
// that does not decode is an error: the write is refused rather than the
// field silently dropped.
func getJSONAnnotation(annotations map[string]string, key string, v any) error {
	s, ok := annotations[key]
	if !ok {
		return nil
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("annotation %s: %w", key, err)
	}
	return nil
}

// withoutRoundTripAnnotations returns annotations less the conversion's
// own, sharing the map when there are none to drop.
func withoutRoundTripAnnotations(annotations map[string]string) map[string]string {
	found := false
	for _, k := range hpaRoundTripAnnotations {
		if _, ok := annotations[k]; ok {
			found = true
		}
	}
	if !found {
		return annotations
	}
	out := maps.Clone(annotations)
	for _, k := range hpaRoundTripAnnotations {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cpuUtilizationMetric(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
		},
	}
}

// metricSpecToV1 and the functions below map one metric between v2's
// target/identifier shape and v1's flat fields, as upstream's conversion.
func metricSpecToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if m.Object != nil {
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(m.Object.DescribedObject),
			MetricName:   m.Object.Metric.Name,
			Selector:     m.Object.Metric.Selector,
			TargetValue:  quantityOrZero(m.Object.Target.Value),
			AverageValue: m.Object.Target.AverageValue,
		}
	}
	if m.Pods != nil {
		out.Pods = &autoscalingv1.PodsMetricSource{
			MetricName: m.Pods.Metric.Name, Selector: m.Pods.Metric.Selector,
			TargetAverageValue: quantityOrZero(m.Pods.Target.AverageValue),
		}
	}
	if m.Resource != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{
			Name: m.Resource.Name, TargetAverageUtilization: m.Resource.Target.AverageUtilization,
			TargetAverageValue: m.Resource.Target.AverageValue,
		}
	}
	if m.ContainerResource != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name: m.ContainerResource.Name, Container: m.ContainerResource.Container,
			TargetAverageUtilization: m.ContainerResource.Target.AverageUtilization,
			TargetAverageValue:       m.ContainerResource.Target.AverageValue,
		}
	}
	if m.External != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName: m.External.Metric.Name, MetricSelector: m.External.Metric.Selector,
			TargetValue: m.External.Target.Value, TargetAverageValue: m.External.Target.AverageValue,
		}
	}
	return out
}

func metricSpecFromV1(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: quantityPtr(o.TargetValue), AverageValue: o.AverageValue}
		if o.AverageValue != nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Target:          t,
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: quantityPtr(p.TargetAverageValue)},
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: r.Name, Target: resourceTarget(r.TargetAverageUtilization, r.TargetAverageValue)}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name: r.Name, Container: r.Container, Target: resourceTarget(r.TargetAverageUtilization, r.TargetAverageValue),
		}
	}
	if e := m.External; e != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, Value: e.TargetValue, AverageValue: e.TargetAverageValue}
		if e.TargetValue != nil {
			t.Type = autoscalingv2.ValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Target: t,
		}
	}
	return out
}

func resourceTarget(utilization *int32, averageValue *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageUtilization: utilization, AverageValue: averageValue}
	if utilization != nil {
		t.Type = autoscalingv2.UtilizationMetricType
	}
	return t
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(o.DescribedObject),
			MetricName: o.Metric.Name, Selector: o.Metric.Selector,
			CurrentValue: quantityOrZero(o.Current.Value), AverageValue: o.Current.AverageValue,
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv1.PodsMetricStatus{
			MetricName: p.Metric.Name, Selector: p.Metric.Selector, CurrentAverageValue: quantityOrZero(p.Current.AverageValue),
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv1.ResourceMetricStatus{
			Name: r.Name, CurrentAverageUtilization: r.Current.AverageUtilization, CurrentAverageValue: quantityOrZero(r.Current.AverageValue),
		}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{
			Name: r.Name, Container: r.Container,
			CurrentAverageUtilization: r.Current.AverageUtilization, CurrentAverageValue: quantityOrZero(r.Current.AverageValue),
		}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv1.ExternalMetricStatus{
			MetricName: e.Metric.Name, MetricSelector: e.Metric.Selector,
			CurrentValue: quantityOrZero(e.Current.Value), CurrentAverageValue: e.Current.AverageValue,
		}
	}
	return out
}

func metricStatusFromV1(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if o := m.Object; o != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(o.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: o.MetricName, Selector: o.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: quantityPtr(o.CurrentValue), AverageValue: o.AverageValue},
		}
	}
	if p := m.Pods; p != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: p.MetricName, Selector: p.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: quantityPtr(p.CurrentAverageValue)},
		}
	}
	if r := m.Resource; r != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{
			Name:    r.Name,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: r.CurrentAverageUtilization, AverageValue: quantityPtr(r.CurrentAverageValue)},
		}
	}
	if r := m.ContainerResource; r != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{
			Name: r.Name, Container: r.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: r.CurrentAverageUtilization, AverageValue: quantityPtr(r.CurrentAverageValue)},
		}
	}
	if e := m.External; e != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: e.MetricName, Selector: e.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: quantityPtr(e.CurrentValue), AverageValue: e.CurrentAverageValue},
		}
	}
	return out
}

func quantityOrZero(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return *q
}

func quantityPtr(q resource.Quantity) *resource.Quantity { return &q }

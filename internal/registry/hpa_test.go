package registry

import (
	"slices"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestHPATargets(t *testing.T) {
	fifty, seventy := int32(50), int32(70)
	q := resource.MustParse("100Mi")
	memory := autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
	}}
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: &q},
	}}
	cpuStatus := autoscalingv2.MetricStatus{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
		Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: &fifty},
	}}
	tests := []struct {
		name    string
		metrics []autoscalingv2.MetricSpec
		current []autoscalingv2.MetricStatus
		want    string
	}{
		{"none", nil, nil, "<none>"},
		{"cpu without a reading", []autoscalingv2.MetricSpec{cpuUtilizationMetric(70)}, nil, "cpu: <unknown>/70%"},
		{"cpu read", []autoscalingv2.MetricSpec{cpuUtilizationMetric(seventy)}, []autoscalingv2.MetricStatus{cpuStatus}, "cpu: 50%/70%"},
		{"a status of another type is no reading", []autoscalingv2.MetricSpec{memory}, []autoscalingv2.MetricStatus{cpuStatus}, "memory: <unknown>/100Mi (avg)"},
		{"external value", []autoscalingv2.MetricSpec{external}, nil, "<unknown>/100Mi"},
		{"two shown, the rest counted", []autoscalingv2.MetricSpec{cpuUtilizationMetric(70), memory, external}, nil, "cpu: <unknown>/70%, memory: <unknown>/100Mi (avg) + 1 more..."},
		{"unknown type", []autoscalingv2.MetricSpec{{Type: "Weird"}}, nil, "<unknown type>"},
		{"known type, source missing", []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &autoscalingv2.HorizontalPodAutoscaler{
				Spec:   autoscalingv2.HorizontalPodAutoscalerSpec{Metrics: tc.metrics},
				Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentMetrics: tc.current},
			}
			if got := hpaTargets(h); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestValidateHPA(t *testing.T) {
	one, three := int32(1), int32(3)
	zero := int32(0)
	base := func() *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web"},
			MinReplicas:    &one, MaxReplicas: 3,
			Metrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(60)},
		}}
	}
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   []string // field paths, in order
	}{
		{"valid", func(*autoscalingv2.HorizontalPodAutoscaler) {}, nil},
		{"min above max", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = &three; h.Spec.MaxReplicas = 2 }, []string{"spec.maxReplicas"}},
		{"min zero", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = &zero }, []string{"spec.minReplicas"}},
		{"no target", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
		}, []string{"spec.scaleTargetRef.kind", "spec.scaleTargetRef.name"}},
		{"utilization zero", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(0)}
		}, []string{"spec.metrics[0].resource.target.averageUtilization"}},
		{"type without its source", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType}}
		}, []string{"spec.metrics[0].pods"}},
		{"unknown type", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Weird"}}
		}, []string{"spec.metrics[0].type"}},
		{"bad policy", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Bogus", Value: 0, PeriodSeconds: 4000}},
			}}
		}, []string{"spec.behavior.scaleUp.policies[0].type", "spec.behavior.scaleUp.policies[0].value", "spec.behavior.scaleUp.policies[0].periodSeconds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := base()
			tc.mutate(h)
			errs := validateHPA(h)
			if got := paths(errs); !slices.Equal(got, tc.want) {
				t.Errorf("errors at %v, want %v (%v)", got, tc.want, errs)
			}
		})
	}
}

func paths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

package apiserver

import (
	"context"
	"fmt"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkListConverted lists 10,000 objects of a resource served in two
// versions, in its storage version and in the converted one: the
// difference per object is what conversion costs a LIST (decode, convert,
// encode, against decode and encode, or the stored protobuf passed
// through). `go test -run - -bench ListConverted -benchtime 20x`.
func BenchmarkListConverted(b *testing.B) {
	const n = 10000
	e := newEnv(b)
	ctx := context.Background()
	minReplicas := int32(1)
	for i := range n {
		if _, err := e.proto.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hpa-%d", i)},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: fmt.Sprintf("web-%d", i)},
				MinReplicas:    &minReplicas, MaxReplicas: 10,
				Metrics: []autoscalingv2.MetricSpec{cpuMetric(60)},
			},
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		now := metav1.NewTime(time.Now())
		if _, err := e.proto.CoreV1().Events("default").Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("ev-%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("pod-%d", i)},
			Reason:         "Scheduled", Message: fmt.Sprintf("Successfully assigned default/pod-%d to node-%d", i, i%1000),
			Source: corev1.EventSource{Component: "default-scheduler"}, FirstTimestamp: now, LastTimestamp: now, Count: 1, Type: corev1.EventTypeNormal,
		}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	lists := []struct {
		name string
		list func() (int, error)
	}{
		{"horizontalpodautoscalers/autoscaling-v2-storage", func() (int, error) {
			l, err := e.proto.AutoscalingV2().HorizontalPodAutoscalers("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}},
		{"horizontalpodautoscalers/autoscaling-v1-converted", func() (int, error) {
			l, err := e.proto.AutoscalingV1().HorizontalPodAutoscalers("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}},
		{"events/core-v1-storage", func() (int, error) {
			l, err := e.proto.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}},
		{"events/events.k8s.io-v1-converted", func() (int, error) {
			l, err := e.proto.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			return len(l.Items), nil
		}},
	}
	for _, l := range lists {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				got, err := l.list()
				if err != nil {
					b.Fatal(err)
				}
				if got != n {
					b.Fatalf("listed %d, want %d", got, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/object")
		})
	}
}

func cpuMetric(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
		},
	}
}

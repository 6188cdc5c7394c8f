package endpointslice

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLastChangeTriggerTime(t *testing.T) {
	created := metav1.NewTime(time.Unix(1000, 0))
	ready := metav1.NewTime(time.Unix(2000, 0))
	deleted := metav1.NewTime(time.Unix(3000, 0))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: created}}
	readyPod := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, LastTransitionTime: ready}}}}
	deleting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want metav1.Time
	}{
		{"service only", nil, created},
		{"pod became ready", []*corev1.Pod{readyPod}, ready},
		{"pod deleting", []*corev1.Pod{readyPod, deleting}, deleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lastChangeTriggerTime(svc, tc.pods, nil, time.Unix(9000, 0)); !got.Equal(tc.want.Time) {
				t.Fatalf("got %s, want %s", got, tc.want.Time)
			}
		})
	}
}

func TestTriggerTimeOfARemovalIsTheSyncTime(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(time.Unix(1000, 0))}}
	prev := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		corev1.EndpointsLastChangeTriggerTime: time.Unix(1000, 0).UTC().Format(time.RFC3339Nano)}}}
	now := time.Unix(5000, 0)
	if got := lastChangeTriggerTime(svc, nil, []*discoveryv1.EndpointSlice{prev}, now); !got.Equal(now) {
		t.Fatalf("a write no pod change explains got trigger time %s, want the sync's start %s", got, now)
	}
}

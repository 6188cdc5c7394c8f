package endpoints

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pod(i int, ready bool, portName string) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "ns"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: fmt.Sprintf("10.1.%d.%d", i/200, i%200+1),
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
	if portName != "" {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: portName, ContainerPort: 8080}}
	}
	return p
}

func TestSubsets(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"a": "b"},
		Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("web")}},
	}}
	many := func(n int, ready bool) []*corev1.Pod {
		var out []*corev1.Pod
		for i := range n {
			out = append(out, pod(i, ready, "web"))
		}
		return out
	}
	now := metav1.Now()
	terminating := pod(9, true, "web")
	terminating.DeletionTimestamp = &now
	tests := []struct {
		name            string
		pods            []*corev1.Pod
		subsets         int
		ready, notReady int
		truncated       bool
	}{
		{"ready and not ready", []*corev1.Pod{pod(1, true, "web"), pod(2, false, "web")}, 1, 1, 1, false},
		{"named port missing: pod left out", []*corev1.Pod{pod(1, true, "web"), pod(2, true, "other")}, 1, 1, 0, false},
		{"terminating left out", []*corev1.Pod{pod(1, true, "web"), terminating}, 1, 1, 0, false},
		{"capped at 1000, ready first", append(many(600, false), func() []*corev1.Pod {
			var out []*corev1.Pod
			for i := 600; i < 1200; i++ {
				out = append(out, pod(i, true, "web"))
			}
			return out
		}()...), 1, 600, 400, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ss, truncated := Subsets(svc, tc.pods)
			if len(ss) != tc.subsets || truncated != tc.truncated {
				t.Fatalf("%d subsets truncated=%v, want %d %v", len(ss), truncated, tc.subsets, tc.truncated)
			}
			ready, notReady := 0, 0
			for _, s := range ss {
				ready += len(s.Addresses)
				notReady += len(s.NotReadyAddresses)
				if len(s.Ports) != 1 || s.Ports[0].Port != 8080 || s.Ports[0].Name != "http" {
					t.Fatalf("ports %+v", s.Ports)
				}
			}
			if ready != tc.ready || notReady != tc.notReady {
				t.Fatalf("ready %d notReady %d, want %d %d", ready, notReady, tc.ready, tc.notReady)
			}
		})
	}
}

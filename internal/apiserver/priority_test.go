package apiserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSystemPriorityClassesExist(t *testing.T) {
	e := newEnv(t)
	for name, value := range map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000} {
		pc, err := e.cs.SchedulingV1().PriorityClasses().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		if pc.Value != value {
			t.Errorf("%s value = %d, want %d", name, pc.Value, value)
		}
	}
}

func TestPodPriorityAdmission(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	never := corev1.PreemptNever
	if _, err := e.cs.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: "batch-low"}, Value: 100, PreemptionPolicy: &never,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, class string, priority *int32) *corev1.Pod {
		p := testPod(name, "")
		p.Spec.PriorityClassName = class
		p.Spec.Priority = priority
		return p
	}
	tests := []struct {
		name         string
		pod          *corev1.Pod
		wantPriority int32
		wantPolicy   corev1.PreemptionPolicy
		wantErr      string
	}{
		{name: "no class", pod: pod("a", "", nil), wantPriority: 0, wantPolicy: corev1.PreemptLowerPriority},
		{name: "user class", pod: pod("b", "batch-low", nil), wantPriority: 100, wantPolicy: corev1.PreemptNever},
		{name: "system class", pod: pod("c", "system-node-critical", nil), wantPriority: 2000001000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "matching explicit value", pod: pod("d", "batch-low", ptr(int32(100))), wantPriority: 100, wantPolicy: corev1.PreemptNever},
		{name: "unknown class", pod: pod("e", "nope", nil), wantErr: "no PriorityClass with name nope was found"},
		{name: "conflicting explicit value", pod: pod("f", "batch-low", ptr(int32(7))), wantErr: "must not be provided in pod spec"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.cs.CoreV1().Pods("default").Create(ctx, tt.pod, metav1.CreateOptions{})
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want 403 Forbidden containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Spec.Priority == nil || *got.Spec.Priority != tt.wantPriority {
				t.Errorf("priority = %v, want %d", got.Spec.Priority, tt.wantPriority)
			}
			if got.Spec.PreemptionPolicy == nil || *got.Spec.PreemptionPolicy != tt.wantPolicy {
				t.Errorf("preemptionPolicy = %v, want %s", got.Spec.PreemptionPolicy, tt.wantPolicy)
			}
		})
	}
}

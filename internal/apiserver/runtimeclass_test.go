package apiserver

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestRuntimeClassAdmission: a pod naming a RuntimeClass gets its overhead
// and node selector; one naming a missing class is 403.
func TestRuntimeClassAdmission(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.cs.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc",
		Overhead:   &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
		Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := testPod("sandboxed", "")
	pod.Spec.RuntimeClassName = ptr("gvisor")
	got, err := e.cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := got.Spec.Overhead[corev1.ResourceMemory]; q.String() != "64Mi" || got.Spec.NodeSelector["sandbox"] != "gvisor" {
		t.Errorf("pod overhead %v, node selector %v", got.Spec.Overhead, got.Spec.NodeSelector)
	}

	missing := testPod("missing", "")
	missing.Spec.RuntimeClassName = ptr("kata")
	_, err = e.cs.CoreV1().Pods("default").Create(ctx, missing, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `RuntimeClass "kata" not found`) {
		t.Fatalf("err = %v, want 403 naming the missing class", err)
	}
}

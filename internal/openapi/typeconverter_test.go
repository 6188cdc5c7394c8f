package openapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTypeConverterConvertsPod(t *testing.T) {
	tc, err := newForTest(t).TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "c", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}},
		}},
	}
	typed, err := tc.ObjectToTyped(pod)
	if err != nil {
		t.Fatalf("ObjectToTyped: %v", err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatalf("ToFieldSet: %v", err)
	}
	// Containers are a map keyed by name: the set must say so.
	if s := set.String(); !strings.Contains(s, `.spec.containers[name="c"].image`) {
		t.Errorf("field set lacks the keyed container image:\n%s", s)
	}
	back, err := tc.TypedToObject(typed)
	if err != nil {
		t.Fatalf("TypedToObject: %v", err)
	}
	if back.GetObjectKind().GroupVersionKind().Kind != "Pod" {
		t.Errorf("round trip kind = %v", back.GetObjectKind().GroupVersionKind())
	}
}

package openapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
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

// The converter skips schema validation only for typed objects: their field
// sets must be what upstream's validating converter gives, and an apply
// configuration (unstructured) with a value of the wrong type must still
// fail.
func TestTypeConverterMatchesValidating(t *testing.T) {
	o := newForTest(t)
	tc, err := o.TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	upstream := tc.(*typeConverter).validating
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "c", Image: "nginx",
				Env:   []corev1.EnvVar{{Name: "X", Value: "1"}, {Name: "X", Value: "2"}}, // duplicate keys, as upstream allows
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			}},
			Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
		},
	}
	for _, obj := range []runtime.Object{pod, &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}} {
		fast, err := tc.ObjectToTyped(obj, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := upstream.ObjectToTyped(obj, typed.AllowDuplicates)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := fast.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		ss, err := slow.ToFieldSet()
		if err != nil {
			t.Fatal(err)
		}
		if !fs.Equals(ss) {
			t.Errorf("field sets differ:\nfast %s\nupstream %s", fs, ss)
		}
	}

	bad := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]interface{}{"name": "p"},
		"spec": map[string]interface{}{"containers": "not a list"},
	}}
	if _, err := tc.ObjectToTyped(bad); err == nil {
		t.Error("an unstructured Pod with spec.containers a string converted without error")
	}
	if _, err := tc.ObjectToTyped(&metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NoSuchKind"}}); err == nil {
		t.Error("an unknown kind converted without error")
	}
}

package storebench

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodValues(t *testing.T) {
	values, err := newValues("pods", 1536)
	if err != nil {
		t.Fatal(err)
	}
	a, b := values(1), values(2)
	if bytes.Equal(a, b) {
		t.Fatal("two objects got the same value")
	}
	for _, v := range [][]byte{a, b} {
		if len(v) < 1500 || len(v) > 1600 {
			t.Errorf("value of %d bytes, want about 1536", len(v))
		}
		var pod corev1.Pod
		if err := pod.Unmarshal(v); err != nil || pod.Name == "" || pod.Spec.NodeName == "" {
			t.Errorf("value does not decode as a named, bound Pod: %v", err)
		}
	}
	if _, err := newValues("zeros", 10); err == nil {
		t.Error("unknown values kind accepted")
	}
}

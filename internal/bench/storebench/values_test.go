package storebench

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/myriad-k8s/myriad/internal/registry"
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
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	codec := protobuf.NewSerializer(scheme, scheme)
	for _, v := range [][]byte{a, b} {
		if len(v) < 1200 || len(v) > 1800 {
			t.Errorf("value of %d bytes, want about 1.5 KB", len(v))
		}
		obj, _, err := codec.Decode(v, nil, nil)
		pod, ok := obj.(*corev1.Pod)
		if err != nil || !ok || pod.Name == "" || pod.Spec.NodeName == "" {
			t.Errorf("value does not decode as a named, bound Pod: %T %v", obj, err)
		}
	}
	if _, err := newValues("zeros", 10); err == nil {
		t.Error("unknown values kind accepted")
	}
}

package apibench

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func encodeProtobuf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCountItems(t *testing.T) {
	pod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "x"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	}
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}, Items: []corev1.Pod{pod("a"), pod("b"), pod("c")}}
	empty := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	one := pod("a")
	one.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	listBytes := encodeProtobuf(t, list)
	for _, tc := range []struct {
		name    string
		data    []byte
		want    int
		wantErr string
	}{
		{"list of three", listBytes, 3, ""},
		{"empty list", encodeProtobuf(t, empty), 0, ""},
		{"one object", encodeProtobuf(t, &one), 1, ""},
		{"json", []byte(`{"kind":"PodList","items":[]}`), 0, "not protobuf"},
		{"truncated envelope", listBytes[:len(listBytes)/2], 0, "envelope"},
		{"no magic", listBytes[4:], 0, "not protobuf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countItems(tc.data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("countItems = %d, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("countItems = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestStatusMessage(t *testing.T) {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
		Message: `namespaces "nope" not found`, Reason: metav1.StatusReasonNotFound, Code: 404}
	if got := statusMessage(encodeProtobuf(t, st)); got != st.Message {
		t.Fatalf("protobuf Status: %q", got)
	}
	long := strings.Repeat("x", 500)
	if got := statusMessage([]byte(long)); got != long[:200] {
		t.Fatalf("raw answer: %q", got)
	}
}

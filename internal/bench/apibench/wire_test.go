package apibench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	// A ConfigMap's field 2 is its data map: one entry per key.
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"a": "1", "b": "2", "c": "3"}}
	listBytes := encodeProtobuf(t, list)
	// A well-formed envelope around a list whose last item is cut short.
	var env runtime.Unknown
	if err := env.Unmarshal(listBytes[len(protobufMagic):]); err != nil {
		t.Fatal(err)
	}
	env.Raw = env.Raw[:len(env.Raw)-3]
	cutRaw, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	cutList := append(append([]byte{}, protobufMagic...), cutRaw...)
	for _, tc := range []struct {
		name    string
		data    []byte
		want    int
		wantErr string
	}{
		{"list of three", listBytes, 3, ""},
		{"empty list", encodeProtobuf(t, empty), 0, ""},
		{"one object", encodeProtobuf(t, &one), 1, ""},
		{"object with a repeated field 2", encodeProtobuf(t, cm), 1, ""},
		{"list cut inside an item", cutList, 0, "PodList"},
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

// TestWireClient checks the requests the wire client sends (path, query as
// client-go encodes it, headers, body) and how it reads answers, against
// a server that answers as the API server does.
func TestWireClient(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" accept="+r.Header.Get("Accept"))
		mu.Unlock()
		answer := func(code int, obj runtime.Object) {
			w.Header().Set("Content-Type", protobufType)
			w.WriteHeader(code)
			_, _ = w.Write(encodeProtobuf(t, obj))
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/ns1/pods":
			raw, _ := io.ReadAll(r.Body)
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
			pod, ok := obj.(*corev1.Pod)
			if err != nil || !ok || pod.Name != "p1" || r.Header.Get("Content-Type") != protobufType {
				http.Error(w, fmt.Sprintf("bad create body: %v %T", err, obj), http.StatusBadRequest)
				return
			}
			answer(http.StatusCreated, pod)
		case r.Method == http.MethodPost:
			answer(http.StatusNotFound, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"},
				Status: metav1.StatusFailure, Code: 404, Reason: metav1.StatusReasonNotFound, Message: `namespaces "gone" not found`})
		case r.URL.Path == "/api/v1/pods":
			list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, Items: make([]corev1.Pod, 2)}
			answer(http.StatusOK, list)
		case r.URL.Path == "/api/v1/namespaces/ns1/pods/json":
			w.Header().Set("Content-Type", jsonType)
			_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1"}`))
		default:
			one := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}
			answer(http.StatusOK, one)
		}
	}))
	defer srv.Close()
	rc := &rest.Config{Host: srv.URL, Timeout: time.Minute}
	rc.AcceptContentTypes, rc.ContentType = protobufType+","+jsonType, protobufType
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWireClient(rc, cs.CoreV1().RESTClient())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "p1"}}
	if err := w.createPod(ctx, pod); err != nil {
		t.Fatalf("create: %v", err)
	}
	pod.Namespace = "gone"
	if err := w.createPod(ctx, pod); err == nil || !strings.Contains(err.Error(), `namespaces "gone" not found`) {
		t.Fatalf("create in a missing namespace: %v", err)
	}
	if err := w.getPod(ctx, "ns1", "p1"); err != nil {
		t.Fatalf("get: %v", err)
	}
	if err := w.getPod(ctx, "ns1", "json"); err == nil || !strings.Contains(err.Error(), "not protobuf") {
		t.Fatalf("get of a JSON answer: %v", err)
	}
	n, err := w.listPods(ctx, "", metav1.ListOptions{FieldSelector: "spec.nodeName=n 1", Limit: 5})
	if err != nil || n != 2 {
		t.Fatalf("list: %d, %v", n, err)
	}
	want := []string{
		"POST /api/v1/namespaces/ns1/pods?timeout=1m0s accept=" + rc.AcceptContentTypes,
		"POST /api/v1/namespaces/gone/pods?timeout=1m0s accept=" + rc.AcceptContentTypes,
		"GET /api/v1/namespaces/ns1/pods/p1?timeout=1m0s accept=" + rc.AcceptContentTypes,
		"GET /api/v1/namespaces/ns1/pods/json?timeout=1m0s accept=" + rc.AcceptContentTypes,
		"GET /api/v1/pods?fieldSelector=spec.nodeName%3Dn+1&limit=5&timeout=1m0s accept=" + rc.AcceptContentTypes,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/cache"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// TestWatchListFromStoredBytes checks that a protobuf watch's initial
// events, framed around the cache's stored bytes, are byte for byte what
// encoding the decoded objects gives, and that client-go's WatchList gets
// the same pods, resourceVersions included, in both formats.
func TestWatchListFromStoredBytes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clients := map[string]kubernetes.Interface{runtime.ContentTypeJSON: e.cs, runtime.ContentTypeProtobuf: e.proto}
	s := e.api
	c := clients[runtime.ContentTypeJSON]
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%02d", i), Labels: map[string]string{"app": "w", "i": fmt.Sprint(i)}},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("n%d", i%3), Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
		if _, err := c.CoreV1().Pods("ws").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Newer revisions for some, so the suffix must carry each pod's own.
	for _, n := range []string{"p04", "p17"} {
		if _, err := c.CoreV1().Pods("ws").Patch(ctx, n, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	h, ok := s.handler(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if !ok || !h.storedProtobuf {
		t.Fatalf("pods handler: found %v, stored protobuf %v", ok, ok && h.storedProtobuf)
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/pods?watch=true", nil)
	req.Header.Set("Accept", runtime.ContentTypeProtobuf)
	choice, ok := h.negotiate(req)
	if !ok || !h.watchesStored(choice) {
		t.Fatalf("protobuf watch does not take stored bytes (negotiated %v)", ok)
	}
	var stored []cache.Stored
	if _, err := h.cache.ListStored(ctx, cache.ListOptions{Namespace: "ws"}, func(st cache.Stored) error {
		stored = append(stored, st)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var decoded []runtime.Object
	if _, err := h.cache.List(ctx, cache.ListOptions{Namespace: "ws"}, func(o runtime.Object) error {
		decoded = append(decoded, o)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 30 || len(decoded) != 30 {
		t.Fatalf("listed %d stored, %d decoded", len(stored), len(decoded))
	}
	var scratch []byte
	for i := range stored {
		got, err := h.storedWatchEvent(&cache.Event{Type: watch.Added, Stored: &stored[i], Revision: stored[i].ModRevision}, &scratch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := h.encodeWatchEvent(choice, watch.Added, decoded[i])
		if err != nil {
			t.Fatal(err)
		}
		// Not byte-equal: the stored path sets resourceVersion by a second
		// metadata field that protobuf parsers merge into the first.
		gotTyp, gotPod := decodeWatchFrame(t, got)
		_, wantPod := decodeWatchFrame(t, want)
		if gotTyp != watch.Added || gotPod.ResourceVersion == "" || !apiequality.Semantic.DeepEqual(gotPod, wantPod) {
			t.Fatalf("%s: stored event (%s) differs from the encoded one:\n%v\n%v", stored[i].Key, gotTyp, gotPod, wantPod)
		}
	}

	// client-go's WatchList in both formats: the same pods and versions.
	watchList := func(c kubernetes.Interface, selector string) map[string]string {
		t.Helper()
		yes := true
		w, err := c.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{
			SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks: true, FieldSelector: selector,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		got := map[string]string{}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Added:
				p := ev.Object.(*corev1.Pod)
				got[p.Name] = p.ResourceVersion + " " + p.Labels["touched"] + " " + p.Spec.NodeName + " " + p.Kind
			case watch.Bookmark:
				if ev.Object.(*corev1.Pod).Annotations[metav1.InitialEventsAnnotationKey] == "true" {
					return got
				}
			default:
				t.Fatalf("unexpected %s event", ev.Type)
			}
		}
		t.Fatal("watch ended before the initial-events-end bookmark")
		return nil
	}
	for _, sel := range []string{"", "spec.nodeName=n1"} {
		pb, js := watchList(clients[runtime.ContentTypeProtobuf], sel), watchList(clients[runtime.ContentTypeJSON], sel)
		if want := map[string]int{"": 30, "spec.nodeName=n1": 10}[sel]; len(pb) != want || fmt.Sprint(pb) != fmt.Sprint(js) {
			t.Fatalf("selector %q: protobuf %d pods, JSON %d:\n%v\n%v", sel, len(pb), len(js), pb, js)
		}
		for name, rv := range pb {
			p, err := c.CoreV1().Pods("ws").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if want := p.ResourceVersion + " " + p.Labels["touched"] + " " + p.Spec.NodeName + " "; rv != want {
				t.Fatalf("%s: watch gave %q, GET %q", name, rv, want)
			}
		}
	}
}

// decodeWatchFrame decodes one protobuf watch frame (a metav1.WatchEvent
// holding an enveloped pod) as client-go does.
func decodeWatchFrame(t *testing.T, frame []byte) (watch.EventType, *corev1.Pod) {
	t.Helper()
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame); err != nil {
		t.Fatalf("watch event: %v", err)
	}
	scheme, err := registry.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	var p corev1.Pod
	obj, gvk, err := protobuf.NewSerializer(scheme, scheme).Decode(ev.Object.Raw, nil, &p)
	if err != nil || gvk.Kind != "Pod" || gvk.Version != "v1" {
		t.Fatalf("watch event object: %v (%v)", err, gvk)
	}
	pod := obj.(*corev1.Pod)
	pod.TypeMeta = metav1.TypeMeta{}
	return watch.EventType(ev.Type), pod
}

// BenchmarkWatchListPods is a relist by WatchList of 5,000 pods over
// protobuf (client-go's informer default): the initial events framed around
// the stored bytes, or decoded and encoded per pod. The process CPU includes
// the client's decoding, the same in both.
func BenchmarkWatchListPods(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	pods := e.proto.CoreV1().Pods("default")
	const n = 5000
	for i := range int64(n) {
		if _, err := pods.Create(ctx, benchPod(i), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	h, ok := e.api.handler(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if !ok || !h.storedProtobuf {
		b.Fatal("pods are not served from stored protobuf")
	}
	for _, stored := range []bool{true, false} {
		b.Run(map[bool]string{true: "stored", false: "decoded"}[stored], func(b *testing.B) {
			h.storedProtobuf = stored
			defer func() { h.storedProtobuf = true }()
			yes := true
			b.ReportAllocs()
			done := benchutil.ReportCPU(b)
			for b.Loop() {
				w, err := pods.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for ev := range w.ResultChan() {
					if ev.Type == watch.Added {
						got++
					} else if ev.Type == watch.Bookmark {
						break
					}
				}
				w.Stop()
				if got != n {
					b.Fatalf("%d initial events, want %d", got, n)
				}
			}
			done()
		})
	}
}

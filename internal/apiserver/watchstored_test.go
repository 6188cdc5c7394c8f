package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

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
		got, err := h.storedWatchEvent(&cache.Event{Type: watch.Added, Stored: &stored[i], Revision: stored[i].ModRevision}, choice, &scratch)
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

// TestLiveWatchEventsFromStoredBytes checks that a change's events
// reach protobuf watchers of objects and of metadata (framed around the
// stored bytes) and a JSON one (encoded from the decoded object) alike:
// ADDED, MODIFIED, an update out of a label selector as DELETED, and
// DELETED, each with its own revision as the object's resourceVersion and
// the same metadata, managedFields included.
func TestLiveWatchEventsFromStoredBytes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.cs
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "lw"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	names := []string{"protobuf", "JSON", "metadata"}
	opts := metav1.ListOptions{LabelSelector: "app=a"}
	var watchers []watch.Interface
	for _, wc := range []kubernetes.Interface{e.proto, e.cs} {
		w, err := wc.CoreV1().Pods("lw").Watch(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		watchers = append(watchers, w)
	}
	mc, err := metadata.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("lw").Watch(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Stop()
	watchers = append(watchers, mw)

	pods := c.CoreV1().Pods("lw")
	p, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ADDED " + p.ResourceVersion + " a"}
	if p, err = pods.Patch(ctx, "p", "application/merge-patch+json", []byte(`{"metadata":{"annotations":{"x":"1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want = append(want, "MODIFIED "+p.ResourceVersion+" a")
	modified := p.ObjectMeta
	if p, err = pods.Patch(ctx, "p", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Leaving the selector: the last version it matched, at the update's
	// revision.
	want = append(want, "DELETED "+p.ResourceVersion+" a")
	if _, err = pods.Patch(ctx, "p", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	if err := pods.Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	for i, w := range watchers {
		var got []string
		var metas []metav1.ObjectMeta
		for len(got) < 5 {
			ev, ok := <-w.ResultChan()
			if !ok {
				t.Fatalf("%s watcher ended after %v", names[i], got)
			}
			var m metav1.ObjectMeta
			switch o := ev.Object.(type) {
			case *corev1.Pod:
				m = o.ObjectMeta
			case *metav1.PartialObjectMetadata:
				m = o.ObjectMeta
			default:
				t.Fatalf("%s watcher: %s %T", names[i], ev.Type, ev.Object)
			}
			got = append(got, string(ev.Type)+" "+m.ResourceVersion+" "+m.Labels["app"])
			metas = append(metas, m)
		}
		// The re-add and the delete: their revisions come from the events.
		if got[3] != "ADDED "+metas[3].ResourceVersion+" a" || !strings.HasPrefix(got[4], "DELETED ") || metas[4].ResourceVersion == metas[3].ResourceVersion {
			t.Fatalf("%s watcher: re-add and delete %q", names[i], got[3:])
		}
		if fmt.Sprint(got[:3]) != fmt.Sprint(want) {
			t.Fatalf("%s watcher: got %q, want %q", names[i], got[:3], want)
		}
		if !apiequality.Semantic.DeepEqual(metas[1], modified) {
			t.Fatalf("%s watcher: MODIFIED metadata\n%v\nwant (the patch's answer)\n%v", names[i], metas[1], modified)
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
	const n = 5000
	e, h := benchPodsHandler(b, n)
	ctx := context.Background()
	pods := e.proto.CoreV1().Pods("default")
	yes := true
	storedOrDecoded(b, h, func(b *testing.B) {
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
	})
}

// BenchmarkLeaseRenewalWatched is one Lease renewal (an update over
// protobuf) reaching two protobuf watchers of leases, one typed (the node
// lifecycle controller's) and one of metadata (the garbage collector's),
// with the events framed around the stored bytes or decoded and encoded.
// The process CPU includes the client's request and both decodes, the
// same in both.
func BenchmarkLeaseRenewalWatched(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	leases := e.proto.CoordinationV1().Leases("default")
	holder := "node-0"
	l, err := leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-0"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	h, ok := e.api.handler(coordinationv1.SchemeGroupVersion.WithResource("leases"))
	if !ok || !h.storedProtobuf {
		b.Fatal("leases are not served from stored protobuf")
	}
	mc, err := metadata.NewForConfig(e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	storedOrDecoded(b, h, func(b *testing.B) {
		tw, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer tw.Stop()
		mw, err := mc.Resource(coordinationv1.SchemeGroupVersion.WithResource("leases")).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer mw.Stop()
		for b.Loop() {
			now := metav1.NewMicroTime(time.Now())
			l.Spec.RenewTime = &now
			if l, err = leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				b.Fatal(err)
			}
			for _, w := range []watch.Interface{tw, mw} {
				if ev := <-w.ResultChan(); ev.Type != watch.Modified {
					b.Fatalf("%s event", ev.Type)
				}
			}
		}
	})
}

// BenchmarkMetadataListPods lists 5,000 pods' metadata over protobuf (the
// garbage collector's and quota controller's relists): field 1 of the
// stored bytes, or decoded pods turned into PartialObjectMetadata and
// encoded.
func BenchmarkMetadataListPods(b *testing.B) {
	const n = 5000
	e, h := benchPodsHandler(b, n)
	mc, err := metadata.NewForConfig(e.cfg)
	if err != nil {
		b.Fatal(err)
	}
	pods := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default")
	storedOrDecoded(b, h, func(b *testing.B) {
		for b.Loop() {
			l, err := pods.List(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(l.Items) != n {
				b.Fatalf("%d items, want %d", len(l.Items), n)
			}
		}
	})
}

// benchPodsHandler is an env holding n benchmark pods and its pods
// handler, which serves them from stored protobuf.
func benchPodsHandler(b *testing.B, n int) (*testEnv, *resourceHandler) {
	e := newEnv(b)
	pods := e.proto.CoreV1().Pods("default")
	for i := range int64(n) {
		if _, err := pods.Create(context.Background(), benchPod(i), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	h, ok := e.api.handler(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if !ok || !h.storedProtobuf {
		b.Fatal("pods are not served from stored protobuf")
	}
	return e, h
}

// storedOrDecoded runs op as two sub-benchmarks, "stored" and "decoded"
// (h passing stored bytes through, or not), with allocations and process
// CPU per op reported.
func storedOrDecoded(b *testing.B, h *resourceHandler, op func(b *testing.B)) {
	for _, stored := range []bool{true, false} {
		b.Run(map[bool]string{true: "stored", false: "decoded"}[stored], func(b *testing.B) {
			h.storedProtobuf = stored
			defer func() { h.storedProtobuf = true }()
			b.ReportAllocs()
			done := benchutil.ReportCPU(b)
			op(b)
			done()
		})
	}
}

// FuzzMetadataField: any bytes give field 1's entries or an error, never a
// panic; what it returns parses as the stored object's metadata would.
func FuzzMetadataField(f *testing.F) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "n"}}
	raw, err := p.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte{0x0a, 0x00, 0x12, 0x00, 0x0a, 0x02, 0x0a, 0x00})
	f.Add([]byte{0x0a, 0x05})
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, err := metadataField(msg)
		if err != nil {
			return
		}
		var pm metav1.PartialObjectMetadata
		var whole corev1.Pod
		if whole.Unmarshal(msg) != nil {
			return // field 1 framed right, another field not a Pod's
		}
		if err := pm.Unmarshal(got); err != nil {
			t.Fatalf("metadata of a message that parses as a Pod does not parse: %v", err)
		}
		if !apiequality.Semantic.DeepEqual(pm.ObjectMeta, whole.ObjectMeta) {
			t.Fatalf("metadata %v, the whole message's %v", pm.ObjectMeta, whole.ObjectMeta)
		}
	})
}

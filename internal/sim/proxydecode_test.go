package sim

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// testSlice is an EndpointSlice of n endpoints, as the controller writes one.
func testSlice(name string, n int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: "42",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for i := range n {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.%d.%d", i/250, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
			NodeName:   ptr.To(fmt.Sprintf("node-%d", i)),
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: fmt.Sprintf("web-%d", i)},
		})
	}
	return s
}

// protoDecoder returns the protobuf decoder the proxies' clients use for
// watch events, over cache, and the encoded bytes of obj as a watch event
// carries them.
func protoDecoder(t testing.TB, cache *decodeCache, obj k8sruntime.Object) (k8sruntime.Decoder, []byte) {
	t.Helper()
	ns := sharingSerializer{NegotiatedSerializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(), cache: cache}
	info, ok := k8sruntime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), protobufType)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return ns.DecoderToVersion(info.Serializer, discoveryv1.SchemeGroupVersion), buf.Bytes()
}

func TestDecodeCacheSharesIdenticalEvents(t *testing.T) {
	cache := newDecodeCache()
	dec, data := protoDecoder(t, cache, testSlice("web-1", 3))
	_, other := protoDecoder(t, cache, testSlice("web-2", 3))

	// Many watches receiving the same bytes at once: one decoding.
	const watches = 50
	got := make([]k8sruntime.Object, watches)
	var wg sync.WaitGroup
	for i := range watches {
		wg.Go(func() {
			obj, err := k8sruntime.Decode(dec, bytes.Clone(data))
			if err != nil {
				t.Error(err)
			}
			got[i] = obj
		})
	}
	wg.Wait()
	first, ok := got[0].(*discoveryv1.EndpointSlice)
	if !ok || first.Name != "web-1" || len(first.Endpoints) != 3 {
		t.Fatalf("decoded %#v", got[0])
	}
	for i, o := range got {
		if o != got[0] {
			t.Fatalf("watch %d got its own copy", i)
		}
	}
	if d, s := cache.decodes.Load(), cache.shared.Load(); d != 1 || s != watches-1 {
		t.Fatalf("decodes %d, shared %d; want 1 and %d", d, s, watches-1)
	}

	// Other bytes are another object.
	o2, err := k8sruntime.Decode(dec, other)
	if err != nil {
		t.Fatal(err)
	}
	if o2 == got[0] || o2.(*discoveryv1.EndpointSlice).Name != "web-2" {
		t.Fatalf("different bytes decoded to %v", o2)
	}

	// Decoding into an object the caller owns (a list, a get) is never shared.
	into := &discoveryv1.EndpointSlice{}
	o3, _, err := dec.Decode(data, nil, into)
	if err != nil || o3 == got[0] {
		t.Fatalf("decode into: %v, shared %v", err, o3 == got[0])
	}

	// Garbage is an error for every caller, and not kept.
	if _, err := k8sruntime.Decode(dec, []byte("k8s\x00garbage")); err == nil {
		t.Fatal("garbage decoded")
	}

	// Once nothing holds the objects, their entries go.
	got, first, o2 = nil, nil, nil
	deadline := time.Now().Add(5 * time.Second)
	for {
		runtime.GC()
		cache.mu.Lock()
		n := len(cache.entries)
		cache.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d entries left after their objects were collected", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// And the same bytes decode again.
	before := cache.decodes.Load()
	if _, err := k8sruntime.Decode(dec, data); err != nil || cache.decodes.Load() != before+1 {
		t.Fatalf("decode after collection: %v, decodes %d → %d", err, before, cache.decodes.Load())
	}
}

// The proxies against a real API server: each keeps its own watches, and
// an EndpointSlice change is decoded once for all of them.
func TestProxiesShareDecodedEvents(t *testing.T) {
	const proxies = 3
	s, err := New(Config{RESTConfig: startAPIServer(t), Nodes: proxies, Proxies: proxies, ProxyMinSyncPeriod: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.Stop() })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if _, err := s.client.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	slice := testSlice("web-manual", 200)
	slice.ResourceVersion = ""
	slice.Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: time.Now().UTC().Format(time.RFC3339Nano)}
	if _, err := s.client.DiscoveryV1().EndpointSlices("default").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for s.Stats().ProxyProgramming.Count() < proxies {
		if time.Now().After(deadline) {
			t.Fatalf("%d proxies observed %d programming latencies", proxies, s.Stats().ProxyProgramming.Count())
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := s.Stats()
	// The slice reached every proxy's watch; all but the first got it decoded.
	if shared := after.ProxyDecodesShared - before.ProxyDecodesShared; shared < proxies-1 {
		t.Fatalf("%d of %d proxies' slice events were shared, want ≥ %d (decodes %d → %d)", shared, proxies, proxies-1, before.ProxyDecodes, after.ProxyDecodes)
	}
}

// BenchmarkProxyWatchDecode is the simulator's CPU per proxy per
// EndpointSlice event (200 endpoints) with and without sharing.
func BenchmarkProxyWatchDecode(b *testing.B) {
	obj := testSlice("web-1", 200)
	b.Run("own", func(b *testing.B) {
		ns := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
		info, _ := k8sruntime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), protobufType)
		dec := ns.DecoderToVersion(info.Serializer, discoveryv1.SchemeGroupVersion)
		_, data := protoDecoder(b, newDecodeCache(), obj)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k8sruntime.Decode(dec, data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("shared", func(b *testing.B) {
		cache := newDecodeCache()
		dec, data := protoDecoder(b, cache, obj)
		keep, err := k8sruntime.Decode(dec, data) // the first proxy's informer holds it
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := k8sruntime.Decode(dec, data); err != nil {
				b.Fatal(err)
			}
		}
		runtime.KeepAlive(keep)
	})
}

// FuzzSharedDecode: whatever bytes a watch delivers, the shared decoder
// answers as the generated client's own decoder does, twice in a row.
func FuzzSharedDecode(f *testing.F) {
	_, data := protoDecoder(f, newDecodeCache(), testSlice("web-1", 2))
	f.Add(data)
	f.Add([]byte("k8s\x00"))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"}}`))
	f.Add([]byte{})
	ns := rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion()
	info, _ := k8sruntime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), protobufType)
	own := ns.DecoderToVersion(info.Serializer, discoveryv1.SchemeGroupVersion)
	cache := newDecodeCache()
	shared, _ := protoDecoder(f, cache, testSlice("x", 0))
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := k8sruntime.Decode(own, in)
		for range 2 {
			got, err := k8sruntime.Decode(shared, in)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("shared decode error %v, own %v", err, wantErr)
			}
			if err == nil && (reflect.TypeOf(got) != reflect.TypeOf(want) || !apiequality.Semantic.DeepEqual(got, want)) {
				t.Fatalf("shared decode %#v, own %#v", got, want)
			}
		}
	})
}

package sim

import (
	"bytes"
	"io"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// FuzzWatchEventEnvelope checks unmarshalWatchEvent against the generated
// Unmarshal on any input: what it accepts, the generated code accepts and
// decodes the same. (It is stricter with malformed groups in unknown
// fields, which the generated code skips by depth alone.)
func FuzzWatchEventEnvelope(f *testing.F) {
	for _, ev := range testWatchEvents() {
		b, err := ev.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, b...)) // repeated fields: the last one wins
	}
	f.Add([]byte{0x12, 0x05, 0x0a, 0x03, 'a', 'b', 'c', 0x18, 0x01}) // an unknown varint field
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got metav1.WatchEvent
		if err := unmarshalWatchEvent(data, &got); err != nil {
			return
		}
		if err := want.Unmarshal(data); err != nil {
			t.Fatalf("%x: unmarshalWatchEvent accepted what the generated Unmarshal rejects: %v", data, err)
		}
		sameEvent(t, got, want)
	})
}

// FuzzWatchEventRoundTrip checks that every encoded WatchEvent decodes to
// itself.
func FuzzWatchEventRoundTrip(f *testing.F) {
	for _, ev := range testWatchEvents() {
		f.Add(ev.Type, ev.Object.Raw)
	}
	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		want := metav1.WatchEvent{Type: typ, Object: k8sruntime.RawExtension{Raw: raw}}
		b, err := want.Marshal()
		if err != nil {
			t.Skip(err)
		}
		var got metav1.WatchEvent
		if err := unmarshalWatchEvent(b, &got); err != nil {
			t.Fatalf("%x: %v", b, err)
		}
		if err := want.Unmarshal(b); err != nil { // as the generated code reads it
			t.Fatal(err)
		}
		sameEvent(t, got, want)
	})
}

func testWatchEvents() []metav1.WatchEvent {
	return []metav1.WatchEvent{
		{Type: "ADDED", Object: k8sruntime.RawExtension{Raw: []byte("k8s\x00\x0a\x0bobject")}},
		{Type: "BOOKMARK"},
		{Object: k8sruntime.RawExtension{Raw: []byte{}}},
	}
}

func sameEvent(t *testing.T, got, want metav1.WatchEvent) {
	t.Helper()
	if got.Type != want.Type || !bytes.Equal(got.Object.Raw, want.Object.Raw) || (got.Object.Raw == nil) != (want.Object.Raw == nil) {
		t.Fatalf("got %q %x (nil %t), want %q %x (nil %t)", got.Type, got.Object.Raw, got.Object.Raw == nil, want.Type, want.Object.Raw, want.Object.Raw == nil)
	}
}

// The proxies' watch streams decode through an envelopeDecoder, and
// client-go's watch decoder reads consecutive frames through it correctly
// (each event's object is decoded before the next frame reuses the buffer).
func TestProxyWatchStreamDecodesEnvelopesInPlace(t *testing.T) {
	cache := newDecodeCache()
	ns := sharingSerializer{NegotiatedSerializer: rest.CodecFactoryForGeneratedClient(scheme.Scheme, scheme.Codecs).WithoutConversion(), cache: cache}
	objDecoder, streamSerializer, framer, err := k8sruntime.NewClientNegotiator(ns, discoveryv1.SchemeGroupVersion).StreamDecoder(protobufType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := streamSerializer.(envelopeDecoder); !ok {
		t.Fatalf("the protobuf watch stream decodes envelopes with %T, want envelopeDecoder", streamSerializer)
	}
	_, encoded := protoDecoder(t, cache, testSlice("web-1", 3))
	_, encoded2 := protoDecoder(t, cache, testSlice("web-2", 200))
	var stream bytes.Buffer
	w := framer.NewFrameWriter(&stream)
	for _, ev := range []metav1.WatchEvent{
		{Type: "ADDED", Object: k8sruntime.RawExtension{Raw: encoded2}},
		{Type: "MODIFIED", Object: k8sruntime.RawExtension{Raw: encoded}},
	} {
		b, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	d := restclientwatch.NewDecoder(streaming.NewDecoder(framer.NewFrameReader(io.NopCloser(&stream)), streamSerializer), objDecoder)
	for _, want := range []struct {
		typ  watch.EventType
		name string
		n    int
	}{{watch.Added, "web-2", 200}, {watch.Modified, "web-1", 3}} {
		typ, obj, err := d.Decode()
		if err != nil {
			t.Fatal(err)
		}
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if typ != want.typ || !ok || s.Name != want.name || len(s.Endpoints) != want.n {
			t.Fatalf("decoded %s %#v, want %s of %s with %d endpoints", typ, obj, want.typ, want.name, want.n)
		}
	}
}

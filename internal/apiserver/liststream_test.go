package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/metadata"

	"github.com/myriad-k8s/myriad/internal/bench/benchutil"
	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestStreamedListsMatchSerializer checks that the streamed JSON list, the
// protobuf list built from stored bytes, and the non-streamed (pretty) path
// all serve the same objects, pages and resourceVersions.
func TestStreamedListsMatchSerializer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := embedded.Open(ctx, embedded.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s, err := New(Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	srv := httptest.NewServer(s)
	defer srv.Close()
	do := func(method, path, accept, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
		req.Header.Set("Accept", accept)
		req.Header.Set("Content-Type", "application/json")
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", "application/merge-patch+json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
		}
		return data
	}
	do("POST", "/api/v1/namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ls"}}`)
	for i := 0; i < 25; i++ {
		do("POST", "/api/v1/namespaces/ls/pods", "", fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%02d","labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}}`, i))
	}
	scheme, _ := registry.NewScheme()
	pb := protobuf.NewSerializer(scheme, scheme)

	// Give some pods newer revisions, so items carry different versions.
	for _, n := range []string{"p03", "p12", "p20"} {
		do("PATCH", "/api/v1/namespaces/ls/pods/"+n, "", `{"metadata":{"labels":{"touched":"yes"}}}`)
	}
	decodePB := func(raw []byte) corev1.PodList {
		t.Helper()
		var l corev1.PodList
		if _, _, err := pb.Decode(raw, nil, &l); err != nil {
			t.Fatalf("decoding streamed protobuf list: %v", err)
		}
		return l
	}
	decodeJSON := func(raw []byte) corev1.PodList {
		t.Helper()
		var l corev1.PodList
		if _, _, err := s.codecs.json.Serializer.Decode(raw, nil, &l); err != nil {
			t.Fatalf("decoding streamed JSON list: %v", err)
		}
		return l
	}
	// Whole list: protobuf (stored bytes passed through) equals JSON
	// (decoded and re-encoded), resourceVersions included.
	rv := decodeJSON(do("GET", "/api/v1/namespaces/ls/pods", "application/json", "")).ResourceVersion
	fromPB := decodePB(do("GET", "/api/v1/namespaces/ls/pods?resourceVersion="+rv+"&resourceVersionMatch=Exact", "application/vnd.kubernetes.protobuf", ""))
	fromJS := decodeJSON(do("GET", "/api/v1/namespaces/ls/pods?resourceVersion="+rv+"&resourceVersionMatch=Exact", "application/json", ""))
	if len(fromPB.Items) != 25 || sameJSON(t, fromPB.Items) != sameJSON(t, fromJS.Items) {
		t.Fatalf("protobuf and JSON lists differ:\n%s\n%s", sameJSON(t, fromPB.Items), sameJSON(t, fromJS.Items))
	}
	if fromPB.Items[3].ResourceVersion == fromPB.Items[4].ResourceVersion || fromPB.Items[3].Labels["touched"] != "yes" {
		t.Fatalf("item versions not carried: %q %q", fromPB.Items[3].ResourceVersion, fromPB.Items[4].ResourceVersion)
	}
	// Pages: page 2 is served as of page 1's snapshot even after a write.
	page1 := decodePB(do("GET", "/api/v1/namespaces/ls/pods?limit=10", "application/vnd.kubernetes.protobuf", ""))
	if len(page1.Items) != 10 || page1.Continue == "" {
		t.Fatalf("protobuf page 1: %d items, continue %q", len(page1.Items), page1.Continue)
	}
	do("PATCH", "/api/v1/namespaces/ls/pods/p15", "", `{"metadata":{"labels":{"late":"yes"}}}`)
	page2 := decodePB(do("GET", "/api/v1/namespaces/ls/pods?limit=10&continue="+page1.Continue, "application/vnd.kubernetes.protobuf", ""))
	page2JS := decodeJSON(do("GET", "/api/v1/namespaces/ls/pods?limit=10&continue="+page1.Continue, "application/json", ""))
	if sameJSON(t, page2.Items) != sameJSON(t, page2JS.Items) || page2.Items[5].Name != "p15" || page2.Items[5].Labels["late"] != "" {
		t.Fatalf("page 2 not served from page 1's snapshot, or formats differ")
	}

	fromJSON := decodeJSON(do("GET", "/api/v1/namespaces/ls/pods", "application/json", ""))
	if len(fromJSON.Items) != 25 || fromJSON.Items[0].Name != "p00" || fromJSON.Items[24].ResourceVersion == "" {
		t.Fatalf("JSON list: %d items", len(fromJSON.Items))
	}
	// The pretty (non-streamed) path serves the same items.
	var pretty corev1.PodList
	if _, _, err := s.codecs.json.Serializer.Decode(do("GET", "/api/v1/namespaces/ls/pods?pretty=true", "application/json", ""), nil, &pretty); err != nil {
		t.Fatal(err)
	}
	if len(pretty.Items) != 25 || pretty.ResourceVersion != fromJSON.ResourceVersion {
		t.Fatalf("pretty list: %d items rv %s vs %s", len(pretty.Items), pretty.ResourceVersion, fromJSON.ResourceVersion)
	}
}

func TestUnknownRawRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"no magic", []byte{1, 2, 3}},
		{"magic only", protobufMagic},
		{"truncated length", append(append([]byte{}, protobufMagic...), 0x12, 0x05, 1)},
		{"varint field", append(append([]byte{}, protobufMagic...), 0x10, 0x01)},
	} {
		if _, err := unknownRaw(tc.in); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// sameJSON renders items as JSON: protobuf and JSON decoding differ in nil
// versus empty collections, which say the same thing on the wire.
// Item TypeMeta is dropped too: protobuf items have none.
func sameJSON(t *testing.T, items []corev1.Pod) string {
	t.Helper()
	items = append([]corev1.Pod(nil), items...)
	for i := range items {
		items[i].TypeMeta = metav1.TypeMeta{}
	}
	data, err := json.Marshal(items)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// envelopeObject on any prefix of a stored value finds the object where
// the whole value has it, or says it needs more (errEnvelopeCut); a list
// sizes its items from the cache's uncompressed head this way.
func TestEnvelopeObjectFromPrefix(t *testing.T) {
	o := podObjectStore(t)
	pod := benchutil.StoredPod(5, "ns", 10)
	value, err := o.encode(pod)
	if err != nil {
		t.Fatal(err)
	}
	wantOff, wantN, err := envelopeObject(value, len(value))
	if err != nil {
		t.Fatal(err)
	}
	if msg, _ := unknownRaw(value); len(msg) != wantN {
		t.Fatalf("unknownRaw and envelopeObject disagree")
	}
	for cut := 0; cut <= len(value); cut++ {
		off, n, err := envelopeObject(value[:cut], len(value))
		switch {
		case errors.Is(err, errEnvelopeCut):
			if cut >= wantOff {
				t.Errorf("prefix of %d bytes holds the header (object at %d) but was refused", cut, wantOff)
			}
		case err != nil:
			t.Fatalf("prefix of %d bytes: %v", cut, err)
		case off != wantOff || n != wantN:
			t.Fatalf("prefix of %d bytes: object at %d+%d, want %d+%d", cut, off, n, wantOff, wantN)
		}
	}
	// A total the envelope's object cannot fit in is malformed, not cut.
	if _, _, err := envelopeObject(value[:wantOff], wantOff+1); err == nil || errors.Is(err, errEnvelopeCut) {
		t.Errorf("object longer than the value: %v", err)
	}
}

// TestMetadataListFromStoredBytes checks that client-go's metadata client
// (protobuf PartialObjectMetadataList, framed around each stored object's
// field 1) gets what the decoded path gives: every pod's whole metadata,
// managedFields and resourceVersion included, by label, page by page.
func TestMetadataListFromStoredBytes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pods := e.cs.CoreV1().Pods("default")
	for i := range 7 {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("m%d", i), Labels: map[string]string{"odd": fmt.Sprint(i%2 == 1)},
				Annotations: map[string]string{"i": fmt.Sprint(i)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pods.Patch(ctx, "m3", "application/merge-patch+json", []byte(`{"metadata":{"finalizers":["x/y"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	h, ok := e.api.handler(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	if !ok || !h.storedProtobuf {
		t.Fatal("pods are not served from stored protobuf")
	}
	mc, err := metadata.NewForConfig(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"", "odd=true"} {
		want, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			t.Fatal(err)
		}
		var got []metav1.ObjectMeta
		opts := metav1.ListOptions{LabelSelector: sel, Limit: 3}
		for {
			l, err := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default").List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.ResourceVersion == "" {
				t.Fatal("list without a resourceVersion")
			}
			for _, it := range l.Items {
				got = append(got, it.ObjectMeta)
			}
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
		if len(got) != len(want.Items) || len(got) == 0 {
			t.Fatalf("selector %q: %d metadata items, %d pods", sel, len(got), len(want.Items))
		}
		for i, p := range want.Items {
			if !apiequality.Semantic.DeepEqual(got[i], p.ObjectMeta) || len(got[i].ManagedFields) == 0 {
				t.Fatalf("selector %q, %s: metadata\n%v\nwant\n%v", sel, p.Name, got[i], p.ObjectMeta)
			}
		}
	}
}

// TestStoredMetadata: a list item narrowed to its metadata, from the head
// when it holds the field's header, from the value when the head ends
// inside it, and as a copy when the metadata does not lead the message.
func TestStoredMetadata(t *testing.T) {
	meta := []byte{0x0a, 0x03, 0x32, 0x01, 0x37} // field 1: {6: "7"}
	spec := []byte{0x12, 0x02, 0x08, 0x01}       // field 2
	prefix := []byte("envelope")
	cases := []struct {
		name    string
		msg     []byte
		headLen int
		want    []byte
		copied  bool
	}{
		{"leading, head holds it", append(slices.Clone(meta), spec...), 2, meta, false},
		{"leading, head cut in the header", append(slices.Clone(meta), spec...), 1, meta, false},
		{"leading, no head", append(slices.Clone(meta), spec...), 0, meta, false},
		{"after another field", append(slices.Clone(spec), meta...), 9, meta, true},
		{"no metadata", slices.Clone(spec), 9, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := append(slices.Clone(prefix), c.msg...)
			head := v[:min(len(prefix)+c.headLen, len(v))]
			it := pbItem{off: len(prefix), n: len(c.msg)}
			got, err := storedMetadata(it, head, func() ([]byte, error) { return v, nil })
			if err != nil {
				t.Fatal(err)
			}
			b := got.msg
			if b == nil && !c.copied {
				b = v[got.off : got.off+got.n]
			}
			if !bytes.Equal(b, c.want) || got.n != len(c.want) || (got.msg != nil) != (c.copied && c.want != nil) {
				t.Fatalf("got %x (n %d, copied %v), want %x", b, got.n, got.msg != nil, c.want)
			}
		})
	}
	if _, err := storedMetadata(pbItem{off: 0, n: 3}, nil, func() ([]byte, error) { return []byte{0x0a, 0x05, 0x00}, nil }); err == nil {
		t.Fatal("a metadata field longer than the message: no error")
	}
}

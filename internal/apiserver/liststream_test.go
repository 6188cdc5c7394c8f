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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

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

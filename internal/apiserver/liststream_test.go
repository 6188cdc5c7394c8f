package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/myriad-k8s/myriad/internal/registry"
	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestStreamedListsMatchSerializer checks that the streamed JSON and
// protobuf lists decode to exactly what the non-streamed path serves, and
// that the protobuf bytes equal the serializer's own encoding of the list.
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

	raw := do("GET", "/api/v1/namespaces/ls/pods?limit=10", "application/vnd.kubernetes.protobuf", "")
	var streamed corev1.PodList
	if _, _, err := pb.Decode(raw, nil, &streamed); err != nil {
		t.Fatalf("decoding streamed protobuf list: %v", err)
	}
	if len(streamed.Items) != 10 || streamed.Continue == "" || streamed.ResourceVersion == "" {
		t.Fatalf("protobuf page: %d items, continue %q, rv %q", len(streamed.Items), streamed.Continue, streamed.ResourceVersion)
	}
	var want bytes.Buffer
	streamed.Kind, streamed.APIVersion = "PodList", "v1"
	if err := pb.Encode(&streamed, &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(raw, want.Bytes()) {
		t.Fatalf("streamed protobuf differs from the serializer's encoding (%d vs %d bytes)", len(raw), want.Len())
	}

	js := do("GET", "/api/v1/namespaces/ls/pods", "application/json", "")
	var fromJSON corev1.PodList
	if _, _, err := s.codecs.json.Serializer.Decode(js, nil, &fromJSON); err != nil {
		t.Fatalf("decoding streamed JSON list: %v\n%s", err, js)
	}
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

package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"
)

const (
	tableAccept    = "application/json;as=Table;v=v1;g=meta.k8s.io"
	metadataAccept = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	metaListAccept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	protoType      = "application/vnd.kubernetes.protobuf"
)

func TestNegotiateGetAndList(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("cm1", map[string]string{"a": "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proto := protobuf.NewSerializer(e.api.scheme, e.api.scheme)
	tests := []struct {
		name, path, accept string
		wantType           string
		check              func(t *testing.T, body []byte)
	}{
		{"json default", "/api/v1/namespaces/default/configmaps/cm1", "", "application/json", func(t *testing.T, b []byte) {
			var cm corev1.ConfigMap
			mustUnmarshal(t, b, &cm)
			if cm.Name != "cm1" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Data["k"] != "v" {
				t.Fatalf("bad object %s", b)
			}
		}},
		{"json wildcard", "/api/v1/namespaces/default/configmaps/cm1", "*/*", "application/json", nil},
		{"yaml", "/api/v1/namespaces/default/configmaps/cm1", "application/yaml", "application/yaml", func(t *testing.T, b []byte) {
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(b, &cm); err != nil || cm.Name != "cm1" || cm.Kind != "ConfigMap" {
				t.Fatalf("bad YAML (%v): %s", err, b)
			}
		}},
		{"yaml list", "/api/v1/namespaces/default/configmaps", "application/yaml", "application/yaml", func(t *testing.T, b []byte) {
			var l corev1.ConfigMapList
			if err := yaml.Unmarshal(b, &l); err != nil || len(l.Items) != 1 || l.Kind != "ConfigMapList" || l.ResourceVersion == "" {
				t.Fatalf("bad YAML list (%v): %s", err, b)
			}
		}},
		{"protobuf", "/api/v1/namespaces/default/configmaps/cm1", protoType, protoType, func(t *testing.T, b []byte) {
			obj, _, err := proto.Decode(b, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cm, ok := obj.(*corev1.ConfigMap); !ok || cm.Name != "cm1" || cm.Data["k"] != "v" {
				t.Fatalf("bad protobuf object %#v", obj)
			}
		}},
		{"protobuf list", "/api/v1/namespaces/default/configmaps", protoType + ", application/json", protoType, func(t *testing.T, b []byte) {
			obj, _, err := proto.Decode(b, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if l, ok := obj.(*corev1.ConfigMapList); !ok || len(l.Items) != 1 || l.ResourceVersion == "" {
				t.Fatalf("bad protobuf list %#v", obj)
			}
		}},
		{"q values pick yaml", "/api/v1/namespaces/default/configmaps/cm1", "application/json;q=0.5, application/yaml", "application/yaml", nil},
		{"unknown first, json second", "/api/v1/namespaces/default/configmaps/cm1", "text/html, application/json", "application/json", nil},
		{"table get", "/api/v1/namespaces/default/configmaps/cm1", tableAccept, "application/json", func(t *testing.T, b []byte) {
			checkTable(t, b, []string{"cm1"})
		}},
		{"table list", "/api/v1/namespaces/default/configmaps", tableAccept + ", application/json", "application/json", func(t *testing.T, b []byte) {
			checkTable(t, b, []string{"cm1"})
		}},
		{"table list of namespaces (registry columns)", "/api/v1/namespaces", tableAccept, "application/json", func(t *testing.T, b []byte) {
			checkTable(t, b, []string{"default", "kube-node-lease", "kube-public", "kube-system"})
		}},
		{"table as yaml", "/api/v1/namespaces/default/configmaps", "application/yaml;as=Table;v=v1;g=meta.k8s.io", "application/yaml", func(t *testing.T, b []byte) {
			j, err := yaml.YAMLToJSON(b)
			if err != nil {
				t.Fatal(err)
			}
			checkTable(t, j, []string{"cm1"})
		}},
		{"partial metadata as yaml", "/api/v1/namespaces/default/configmaps/cm1", "application/yaml;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", "application/yaml", func(t *testing.T, b []byte) {
			var pm metav1.PartialObjectMetadata
			if err := yaml.Unmarshal(b, &pm); err != nil || pm.Kind != "PartialObjectMetadata" || pm.Name != "cm1" {
				t.Fatalf("bad YAML PartialObjectMetadata (%v): %s", err, b)
			}
		}},
		{"partial metadata", "/api/v1/namespaces/default/configmaps/cm1", metadataAccept, "application/json", func(t *testing.T, b []byte) {
			var pm metav1.PartialObjectMetadata
			mustUnmarshal(t, b, &pm)
			if pm.Kind != "PartialObjectMetadata" || pm.APIVersion != "meta.k8s.io/v1" || pm.Name != "cm1" || pm.Labels["a"] != "b" || pm.UID == "" {
				t.Fatalf("bad PartialObjectMetadata %s", b)
			}
			if bytes.Contains(b, []byte(`"data"`)) {
				t.Fatalf("PartialObjectMetadata carries data: %s", b)
			}
		}},
		{"partial metadata list", "/api/v1/namespaces/default/configmaps", metaListAccept, "application/json", func(t *testing.T, b []byte) {
			var pl metav1.PartialObjectMetadataList
			mustUnmarshal(t, b, &pl)
			if pl.Kind != "PartialObjectMetadataList" || len(pl.Items) != 1 || pl.Items[0].Name != "cm1" || pl.Items[0].Kind != "PartialObjectMetadata" || pl.ResourceVersion == "" {
				t.Fatalf("bad PartialObjectMetadataList %s", b)
			}
		}},
		{"partial metadata protobuf", "/api/v1/namespaces/default/configmaps/cm1", protoType + ";as=PartialObjectMetadata;v=v1;g=meta.k8s.io", protoType, func(t *testing.T, b []byte) {
			obj, _, err := protobuf.NewSerializer(metaScheme(t), metaScheme(t)).Decode(b, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pm, ok := obj.(*metav1.PartialObjectMetadata); !ok || pm.Name != "cm1" {
				t.Fatalf("bad protobuf PartialObjectMetadata %#v", obj)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.accept != "" {
				hdr = append(hdr, "Accept: "+tc.accept)
			}
			r := e.do("GET", tc.path, nil, hdr...)
			if r.code != 200 {
				t.Fatalf("want 200, got %d: %s", r.code, r.body)
			}
			if got := r.header.Get("Content-Type"); got != tc.wantType {
				t.Fatalf("Content-Type %q, want %q", got, tc.wantType)
			}
			if tc.check != nil {
				tc.check(t, r.body)
			}
		})
	}
}

func metaScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddMetaToScheme(s)
	return s
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %T: %v: %s", v, err, b)
	}
}

// checkTable checks a Table's shape and that each row carries the object's
// PartialObjectMetadata, as kubectl relies on.
func checkTable(t *testing.T, b []byte, names []string) {
	t.Helper()
	var raw struct {
		metav1.TypeMeta
		ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
		Rows              []struct {
			Cells  []any                        `json:"cells"`
			Object metav1.PartialObjectMetadata `json:"object"`
		} `json:"rows"`
	}
	mustUnmarshal(t, b, &raw)
	if raw.Kind != "Table" || raw.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("not a Table: %s", b)
	}
	if len(raw.ColumnDefinitions) == 0 || raw.ColumnDefinitions[0].Name != "Name" {
		t.Fatalf("bad columns: %+v", raw.ColumnDefinitions)
	}
	if len(raw.Rows) != len(names) {
		t.Fatalf("want %d rows, got %d: %s", len(names), len(raw.Rows), b)
	}
	for i, row := range raw.Rows {
		if len(row.Cells) != len(raw.ColumnDefinitions) {
			t.Fatalf("row %d has %d cells for %d columns", i, len(row.Cells), len(raw.ColumnDefinitions))
		}
		if row.Cells[0] != names[i] {
			t.Fatalf("row %d: first cell %v, want %s", i, row.Cells[0], names[i])
		}
		if row.Object.Kind != "PartialObjectMetadata" || row.Object.Name != names[i] || row.Object.UID == "" {
			t.Fatalf("row %d: object is not the PartialObjectMetadata of %s: %+v", i, names[i], row.Object)
		}
	}
}

func TestNegotiateNotAcceptable(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct{ name, method, path, accept string }{
		{"get html", "GET", "/api/v1/namespaces/default", "text/html"},
		{"list html", "GET", "/api/v1/namespaces", "text/html"},
		{"table as protobuf", "GET", "/api/v1/namespaces", protoType + ";as=Table;v=v1;g=meta.k8s.io"},
		{"table get as protobuf", "GET", "/api/v1/namespaces/default", protoType + ";as=Table;v=v1;g=meta.k8s.io"},
		{"unknown as", "GET", "/api/v1/namespaces", "application/json;as=Nonsense;v=v1;g=meta.k8s.io"},
		{"table of wrong group", "GET", "/api/v1/namespaces", "application/json;as=Table;v=v1;g=example.com"},
		{"watch html", "GET", "/api/v1/namespaces?watch=true", "text/html"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, nil, "Accept: "+tc.accept)
			r.wantStatus(t, 406, metav1.StatusReasonNotAcceptable)
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("error Content-Type %q, want JSON", ct)
			}
		})
	}
}

func TestNegotiateUnsupportedMediaType(t *testing.T) {
	e := newEnv(t)
	body := mustJSON(t, testConfigMap("x", nil))
	for _, tc := range []struct{ name, method, path, ct string }{
		{"create text/plain", "POST", "/api/v1/namespaces/default/configmaps", "text/plain"},
		{"create garbage content type", "POST", "/api/v1/namespaces/default/configmaps", "!!!"},
		{"update xml", "PUT", "/api/v1/namespaces/default/configmaps/x", "application/xml"},
		{"patch unknown type", "PATCH", "/api/v1/namespaces/default/configmaps/x", "application/json"},
		{"patch no type", "PATCH", "/api/v1/namespaces/default/configmaps/x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hdr []string
			if tc.ct != "" {
				hdr = append(hdr, "Content-Type: "+tc.ct)
			}
			r := e.do(tc.method, tc.path, body, hdr...)
			r.wantStatus(t, 415, metav1.StatusReasonUnsupportedMediaType)
		})
	}
}

// TestWatchFraming checks that every streaming format decodes with
// client-go's own decoders (the typed clients, JSON and protobuf, and raw
// frames for YAML-free streams).
func TestWatchFraming(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients := map[string]func(opts metav1.ListOptions) (watch.Interface, error){
		"json": func(o metav1.ListOptions) (watch.Interface, error) {
			return e.cs.CoreV1().ConfigMaps("default").Watch(ctx, o)
		},
		"proto": func(o metav1.ListOptions) (watch.Interface, error) {
			return e.proto.CoreV1().ConfigMaps("default").Watch(ctx, o)
		},
	}
	for name, watchFn := range clients {
		t.Run(name, func(t *testing.T) {
			list, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w, err := watchFn(metav1.ListOptions{ResourceVersion: list.ResourceVersion})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			cmName := "watch-" + name
			if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap(cmName, nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := e.cs.CoreV1().ConfigMaps("default").Delete(ctx, cmName, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, want := range []watch.EventType{watch.Added, watch.Deleted} {
				select {
				case ev, ok := <-w.ResultChan():
					if !ok {
						t.Fatal("watch closed early")
					}
					cm, isCM := ev.Object.(*corev1.ConfigMap)
					if ev.Type != want || !isCM || cm.Name != cmName {
						t.Fatalf("want %s of %s, got %s %#v", want, cmName, ev.Type, ev.Object)
					}
				case <-ctx.Done():
					t.Fatalf("no %s event", want)
				}
			}
		})
	}
	t.Run("protobuf framing", func(t *testing.T) {
		list, err := e.cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc := e.rawStream(ctx, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion="+list.ResourceVersion, protoType)
		defer rc.Close()
		if _, err := e.cs.CoreV1().ConfigMaps("default").Create(ctx, testConfigMap("framed", nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		proto := protobuf.NewSerializer(e.api.scheme, e.api.scheme)
		frames := protobuf.LengthDelimitedFramer.NewFrameReader(rc)
		dec := streaming.NewDecoder(frames, protobuf.NewRawSerializer(metaScheme(t), metaScheme(t)))
		var ev metav1.WatchEvent
		if _, _, err := dec.Decode(nil, &ev); err != nil {
			t.Fatal(err)
		}
		obj, _, err := proto.Decode(ev.Object.Raw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if cm, ok := obj.(*corev1.ConfigMap); ev.Type != "ADDED" || !ok || cm.Name != "framed" {
			t.Fatalf("bad event %s %#v", ev.Type, obj)
		}
	})
	t.Run("table watch", func(t *testing.T) {
		rc := e.rawStream(ctx, "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0", tableAccept)
		defer rc.Close()
		dec := json.NewDecoder(rc)
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type != "ADDED" || !strings.Contains(string(ev.Object), `"kind":"Table"`) {
			t.Fatalf("want a Table in an ADDED event, got %s %s", ev.Type, ev.Object)
		}
	})
}

// TestProtobufWrites: a protobuf client creates, updates, patches and
// deletes (request bodies in protobuf, answers in protobuf).
func TestProtobufWrites(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cms := e.proto.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, testConfigMap("pb", map[string]string{"x": "1"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "changed"
	if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil || cm.Data["k"] != "changed" {
		t.Fatalf("protobuf update: %v %+v", err, cm)
	}
	l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "x=1"})
	if err != nil || len(l.Items) != 1 || l.Items[0].Data["k"] != "changed" {
		t.Fatalf("protobuf list: %v %+v", err, l)
	}
	if err := cms.Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

package apiextensions

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOpenAPIV3(t *testing.T) {
	crd := widgetCRD(t)
	doc, err := OpenAPIV3(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{
		"/apis/example.com/v1/widgets",
		"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
		"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status",
		"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale",
	} {
		if _, ok := doc.Paths.Paths[path]; !ok {
			t.Errorf("no path %s", path)
		}
	}
	model, ok := doc.Components.Schemas["com.example.v1.Widget"]
	if !ok {
		t.Fatal("no model com.example.v1.Widget")
	}
	js, _ := json.Marshal(model)
	for _, want := range []string{
		`"x-kubernetes-group-version-kind":[{"group":"example.com","kind":"Widget","version":"v1"}]`,
		`"x-kubernetes-selectable-fields":[{"fieldPath":"spec.color"},{"fieldPath":"spec.replicas"}]`,
		`"x-kubernetes-list-map-keys":["name"]`,
		`"default":"small"`, // v3 keeps defaults
		`"$ref":"#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"`,
	} {
		if !strings.Contains(string(js), want) {
			t.Errorf("model lacks %s:\n%s", want, js)
		}
	}
	if _, ok := doc.Components.Schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]; !ok {
		t.Error("the document does not carry ObjectMeta")
	}
	if _, err := OpenAPIV3(crd, "v9"); err == nil {
		t.Error("OpenAPIV3 accepted a version the CRD does not have")
	}
}

func TestOpenAPIV2(t *testing.T) {
	crd := widgetCRD(t)
	doc, err := OpenAPIV2(crd)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"com.example.v1.Widget", "com.example.v1.WidgetList", "com.example.v2.Widget"} {
		if _, ok := doc.Definitions[name]; !ok {
			t.Errorf("no definition %s", name)
		}
	}
	js, _ := json.Marshal(doc.Definitions["com.example.v1.Widget"])
	if strings.Contains(string(js), `"default"`) {
		t.Errorf("v2 definition keeps defaults: %s", js)
	}
	if _, ok := doc.Paths.Paths["/apis/example.com/v2/namespaces/{namespace}/widgets/{name}"]; !ok {
		t.Error("no v2 path")
	}
	// Unserved versions are left out.
	crd.Spec.Versions[1].Served = false
	doc, err = OpenAPIV2(crd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := doc.Definitions["com.example.v2.Widget"]; ok {
		t.Error("unserved v2 is in the document")
	}
}

// TestTypeConverter checks the apply semantics the schema gives: list-type
// map and set merge by key, int-or-string takes both, embedded and
// preserve-unknown-fields objects take anything, and a map-list item
// without its key is refused.
func TestTypeConverter(t *testing.T) {
	s := widgetSchema(t)
	tc := s.TypeConverter()
	a, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
		"spec":{"color":"red","port":"http","ports":[{"name":"a","number":1}],"tags":["x"],
			"template":{"apiVersion":"v1","kind":"Pod","spec":{"anything":[1]}},"extra":{"free":{"form":true}}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
		"spec":{"port":8080,"ports":[{"name":"b","number":2}],"tags":["y"]}}`)})
	if err != nil {
		t.Fatal(err)
	}
	merged, err := a.Merge(b)
	if err != nil {
		t.Fatal(err)
	}
	got := merged.AsValue().Unstructured().(map[string]interface{})["spec"]
	want := obj(t, `{"apiVersion":"v1","kind":"X","spec":{"color":"red","port":8080,"ports":[{"name":"a","number":1},{"name":"b","number":2}],"tags":["x","y"],
		"template":{"apiVersion":"v1","kind":"Pod","spec":{"anything":[1]}},"extra":{"free":{"form":true}}}}`)["spec"]
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Errorf("merged spec\n got %s\nwant %s", g, w)
	}

	_, err = tc.ObjectToTyped(&unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},
		"spec":{"ports":[{"number":2}]}}`)})
	if err == nil || !strings.Contains(err.Error(), "name") {
		t.Errorf("a map-list item without its key: %v", err)
	}

	// The converter knows every version of the CRD.
	if _, err := tc.ObjectToTyped(&unstructured.Unstructured{Object: obj(t, `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"w"},"whatever":1}`)}); err != nil {
		t.Errorf("v2 object: %v", err)
	}
}

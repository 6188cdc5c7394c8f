package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func TestSetCustom(t *testing.T) {
	o := newForTest(t)
	h := o.Handler()
	widgets := schema.GroupVersion{Group: "example.com", Version: "v1"}
	gizmos := schema.GroupVersion{Group: "example.com", Version: "v2"}
	schemaDoc := &spec3.OpenAPI{Version: "3.0.0", Paths: &spec3.Paths{Paths: map[string]*spec3.Path{"/apis/example.com/v2/gizmos": {}}},
		Components: &spec3.Components{Schemas: map[string]*spec.Schema{"com.example.v2.Gizmo": {}}}}
	v2doc := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Paths:       &spec.Paths{Paths: map[string]spec.PathItem{"/apis/example.com/v1/widgets": {}}},
		Definitions: spec.Definitions{"com.example.v1.Widget": spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"object"}}}},
	}}
	builtinV2Paths := len(o.V2().Paths.Paths)

	o.SetCustom([]*spec.Swagger{v2doc}, []CustomGroupVersion{
		{GroupVersion: widgets}, // no schema yet: listed, empty
		{GroupVersion: gizmos, Doc: schemaDoc},
		{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Doc: schemaDoc}, // may not replace a built-in
	})
	if got := strings.Join(o.customKeys(), ","); got != "apis/example.com/v1,apis/example.com/v2" {
		t.Errorf("custom keys %s", got)
	}
	for _, path := range []string{PathV3 + "/apis/example.com/v1", PathV3 + "/apis/example.com/v2"} {
		if resp := get(t, h, path, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, resp.StatusCode)
		}
	}
	body, _ := io.ReadAll(get(t, h, PathV3+"/apis/example.com/v2", nil).Body)
	if !strings.Contains(string(body), "com.example.v2.Gizmo") {
		t.Errorf("v2 group-version document: %s", body)
	}
	body, _ = io.ReadAll(get(t, h, PathV3+"/apis/apps/v1", nil).Body)
	if strings.Contains(string(body), "com.example.v2.Gizmo") {
		t.Error("a custom document replaced apps/v1")
	}
	var disc struct{ Paths map[string]any }
	body, _ = io.ReadAll(get(t, h, PathV3, nil).Body)
	if err := json.Unmarshal(body, &disc); err != nil || disc.Paths["apis/example.com/v1"] == nil {
		t.Errorf("v3 discovery lacks example.com/v1: %v %s", err, body)
	}
	var merged spec.Swagger
	body, _ = io.ReadAll(get(t, h, PathV2, nil).Body)
	if err := json.Unmarshal(body, &merged); err != nil {
		t.Fatal(err)
	}
	if _, ok := merged.Definitions["com.example.v1.Widget"]; !ok || len(merged.Paths.Paths) != builtinV2Paths+1 {
		t.Errorf("merged v2: widget definition %v, %d paths (built-in %d)", ok, len(merged.Paths.Paths), builtinV2Paths)
	}
	if _, ok := o.V2().Definitions["com.example.v1.Widget"]; ok {
		t.Error("the merge changed the built-in document")
	}

	// Removed: 404 again, and v2 is the built-in document.
	o.SetCustom(nil, nil)
	if resp := get(t, h, PathV3+"/apis/example.com/v1", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("removed group-version: %d", resp.StatusCode)
	}
	body, _ = io.ReadAll(get(t, h, PathV2, nil).Body)
	if strings.Contains(string(body), "com.example.v1.Widget") {
		t.Error("v2 still has the removed definition")
	}
}

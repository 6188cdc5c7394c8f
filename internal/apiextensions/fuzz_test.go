package apiextensions

import (
	"context"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// FuzzSchema runs arbitrary JSON through Prune, Default and Validate (as a
// create, an update and a status update) of the widget schema, which has
// every feature: CEL rules, embedded resources, list types, defaults,
// int-or-string and preserved unknown fields, and of a schema that has no
// structural form (preserveUnknownFields). Nothing may panic.
func FuzzSchema(f *testing.F) {
	crd := widgetCRD(f)
	crd.Spec.PreserveUnknownFields = true
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["list"] = apiextensionsv1.JSONSchemaProps{
		Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{{Type: "string"}}},
	}
	nonStructural, err := NewSchema(crd, "v1")
	if err != nil {
		f.Fatal(err)
	}
	schemas := []*Schema{widgetSchema(f), nonStructural}
	ctx := context.Background()
	for _, seed := range []string{
		validWidget,
		`{"spec":{"color":"red","ports":[{"name":"a"},{"name":"a"}],"tags":["x","x"],"template":{"apiVersion":5,"kind":[],"metadata":"x"}}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"a":1}},"spec":{"replicas":"x","size":null,"note":null}}`,
		`{"spec":{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a/b","bogus":{}}},"extra":{"a":[null,{"b":1.5}]}}}`,
		`{"spec":null,"status":{"replicas":-1,"selector":5}}`,
		`[1,2,3]`, `"x"`, `null`, `{"spec":{"minReplicas":9223372036854775807,"replicas":-9223372036854775808}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v interface{}
		if err := utiljson.Unmarshal(data, &v); err != nil {
			return
		}
		obj, ok := v.(map[string]interface{})
		if !ok {
			obj = map[string]interface{}{"spec": v}
		}
		// Most inputs get a valid type so that validation goes past it.
		if _, ok := obj["kind"]; !ok {
			obj["kind"] = "Widget"
			obj["apiVersion"] = "example.com/v1"
		}
		for _, s := range schemas {
			obj := runtime.DeepCopyJSON(obj)
			old := runtime.DeepCopyJSON(obj)
			s.Prune(obj)
			s.Default(obj)
			_ = s.Validate(ctx, obj, nil)
			_ = s.Validate(ctx, obj, old)
			_ = s.ValidateStatus(ctx, obj, old)
			_ = s.Validate(ctx, old, obj)
		}
	})
}

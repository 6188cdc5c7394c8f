package openapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// TypeConverter builds the structured-merge-diff type converter of the
// served kinds (and autoscaling/v1 Scale) from the same definitions and
// GroupVersionKind extensions the documents carry, as kube-apiserver does for
// server-side apply. Building takes a noticeable fraction of a second: call it
// once and share the result, which is safe for concurrent use.
//
// Unlike upstream's, it does not validate typed Go objects against the
// schema: their Go types are what the schema was generated from, so the
// walk can only agree, and it was half of the managedFields cost of every
// create and update. Unstructured objects (server-side apply
// configurations, which a client wrote) are validated as upstream does.
func (o *OpenAPI) TypeConverter() (managedfields.TypeConverter, error) {
	names := []string{modelScale}
	for _, r := range o.cfg.Resources {
		names = append(names, r.modelNames()...)
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(o.v3Config(), names...)
	if err != nil {
		return nil, fmt.Errorf("openapi: collecting definitions for the type converter: %w", err)
	}
	validating, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: building the type converter: %w", err)
	}
	types, err := schemaconv.ToSchemaFromOpenAPI(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: converting the definitions to a merge schema: %w", err)
	}
	parser := &typed.Parser{Schema: smdschema.Schema{Types: types.Types}}
	tc := &typeConverter{validating: validating, types: map[schema.GroupVersionKind]typed.ParseableType{}}
	for name, model := range schemas {
		for _, gvk := range modelKinds(model) {
			tc.types[gvk] = parser.Type(name)
		}
	}
	return tc, nil
}

// typeConverter converts objects of known kinds with its own schema (values
// from two schemas cannot be merged), validating only unstructured ones;
// unknown kinds get upstream's error.
type typeConverter struct {
	validating managedfields.TypeConverter
	types      map[schema.GroupVersionKind]typed.ParseableType
}

func (c *typeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	t, ok := c.types[obj.GetObjectKind().GroupVersionKind()]
	if !ok {
		return c.validating.ObjectToTyped(obj, opts...) // upstream's error for an unknown kind
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return t.FromUnstructured(u.UnstructuredContent(), opts...)
	}
	v, err := value.NewValueReflect(obj)
	if err != nil {
		return nil, fmt.Errorf("reflecting %T: %w", obj, err)
	}
	return typed.AsTypedUnvalidated(v, t.Schema, t.TypeRef), nil
}

func (c *typeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return c.validating.TypedToObject(v)
}

// modelKinds reads a definition's x-kubernetes-group-version-kind
// extension, as upstream's converter indexes its types.
func modelKinds(model *spec.Schema) []schema.GroupVersionKind {
	list, _ := model.Extensions["x-kubernetes-group-version-kind"].([]interface{})
	var out []schema.GroupVersionKind
	for _, item := range list {
		var g, v, k interface{}
		switch m := item.(type) {
		case map[string]interface{}:
			g, v, k = m["group"], m["version"], m["kind"]
		case map[interface{}]interface{}:
			g, v, k = m["group"], m["version"], m["kind"]
		}
		gs, ok1 := g.(string)
		vs, ok2 := v.(string)
		ks, ok3 := k.(string)
		if ok1 && ok2 && ok3 && ks != "" {
			out = append(out, schema.GroupVersionKind{Group: gs, Version: vs, Kind: ks})
		}
	}
	return out
}

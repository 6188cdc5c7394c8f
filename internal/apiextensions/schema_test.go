package apiextensions

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// widgetCRD is testdata/widgets.yaml, defaulted and prepared for create.
func widgetCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds := loadCRDs(t, "testdata/widgets.yaml")
	if len(crds) != 1 {
		t.Fatalf("want 1 CRD, got %d", len(crds))
	}
	return crds[0]
}

func widgetSchema(t testing.TB) *Schema {
	t.Helper()
	s, err := NewSchema(widgetCRD(t), "v1")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// obj decodes JSON as the API server does (integers are int64).
func obj(t testing.TB, js string) map[string]interface{} {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return u.Object
}

const validWidget = `{"apiVersion":"example.com/v1","kind":"Widget",
	"metadata":{"name":"w1","namespace":"default"},
	"spec":{"color":"red","replicas":3,"minReplicas":1,"size":"small"}}`

func TestNewSchemaUnservedVersion(t *testing.T) {
	crd := widgetCRD(t)
	crd.Spec.Versions[1].Served = false
	if _, err := NewSchema(crd, "v2"); err == nil {
		t.Error("NewSchema accepted a version that is not served")
	}
	if _, err := NewSchema(crd, "v9"); err == nil {
		t.Error("NewSchema accepted a version the CRD does not have")
	}

	// The storage version has a schema for reads even when not served.
	crd.Spec.Versions[0].Served = false
	if _, err := NewSchema(crd, "v1"); err == nil {
		t.Error("NewSchema accepted an unserved storage version")
	}
	if _, err := NewStoredSchema(crd, "v1"); err != nil {
		t.Errorf("NewStoredSchema of the storage version: %v", err)
	}
	if _, err := NewStoredSchema(crd, "v2"); err == nil {
		t.Error("NewStoredSchema accepted a version neither served nor stored")
	}
}

func TestPrune(t *testing.T) {
	s := widgetSchema(t)
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","unknownTop":1,
		"metadata":{"name":"w1","namespace":"default","bogus":"x","labels":{"a":"b"}},
		"spec":{"color":"red","unknown":{"deep":true},"note":null,"size":null,
			"extra":{"anything":{"goes":[1,2]}},
			"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","bogus":1},"spec":{"kept":true}},
			"ports":[{"name":"a","number":1,"stray":2}]},
		"status":{"ready":true,"stray":"x"}}`)
	unknown := s.Prune(o)
	sort.Strings(unknown)
	want := []string{"metadata.bogus", "spec.ports[0].stray", "spec.template.metadata.bogus", "spec.unknown", "status.stray", "unknownTop"}
	if !reflect.DeepEqual(unknown, want) {
		t.Errorf("Prune reported %q, want %q", unknown, want)
	}
	wantObj := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget",
		"metadata":{"name":"w1","namespace":"default","labels":{"a":"b"}},
		"spec":{"color":"red","note":null,"size":null,
			"extra":{"anything":{"goes":[1,2]}},
			"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"kept":true}},
			"ports":[{"name":"a","number":1}]},
		"status":{"ready":true}}`)
	if !reflect.DeepEqual(o, wantObj) {
		got, _ := json.Marshal(o)
		want, _ := json.Marshal(wantObj)
		t.Errorf("pruned object\n got %s\nwant %s", got, want)
	}
	// A null with a default is kept for Default to fill, as upstream.
	s.Default(o)
	if size := o["spec"].(map[string]interface{})["size"]; size != "small" {
		t.Errorf("spec.size defaulted to %v", size)
	}
}

func TestPruneMalformedMetadata(t *testing.T) {
	s := widgetSchema(t)
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","labels":5},"spec":{"color":"red","x":1}}`)
	if got := s.Prune(o); !reflect.DeepEqual(got, []string{"spec.x"}) {
		t.Errorf("Prune reported %q", got)
	}
	// Left as sent, for the server's ObjectMeta handling to refuse.
	if labels := o["metadata"].(map[string]interface{})["labels"]; labels != int64(5) {
		t.Errorf("malformed metadata was changed to %v", labels)
	}
}

func TestDefault(t *testing.T) {
	s := widgetSchema(t)
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red"}}`)
	s.Default(o)
	spec := o["spec"].(map[string]interface{})
	want := map[string]interface{}{"color": "red", "size": "small", "replicas": int64(1), "minReplicas": int64(0)}
	if !reflect.DeepEqual(spec, want) {
		t.Errorf("defaulted spec = %v, want %v", spec, want)
	}
}

// TestValidate checks upstream's field paths and messages for each kind of
// schema violation.
func TestValidate(t *testing.T) {
	s := widgetSchema(t)
	ctx := context.Background()
	tests := []struct {
		name string
		spec string // merged over validWidget's spec
		top  string // replaces the whole object when set
		want []string
	}{
		{name: "valid"},
		{name: "int-or-string as string", spec: `{"port":"http"}`},
		{name: "int-or-string as int", spec: `{"port":80}`},
		{name: "embedded resource", spec: `{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}`},
		{name: "nullable null", spec: `{"note":null}`},
		{name: "required", top: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":1,"minReplicas":0}}`,
			want: []string{
				`spec.color: Required value`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			}},
		{name: "enum", spec: `{"color":"pink"}`,
			want: []string{
				`spec.color: Unsupported value: "pink": supported values: "red", "green", "blue"`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			}},
		{name: "maxLength", spec: `{"size":"enormous!"}`,
			want: []string{
				`spec.size: Too long: may not be more than 8 bytes`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			}},
		{name: "pattern", spec: `{"name":"ABC"}`,
			want: []string{`spec.name: Invalid value: "ABC": spec.name in body should match '^[a-z]+$'`}},
		{name: "wrong type", spec: `{"replicas":"three"}`,
			want: []string{
				`spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"`,
				`.spec.replicas: Invalid value: 0: .spec.replicas accessor error: three is of the type string, expected int64`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			}},
		{name: "minimum and scale replicas", spec: `{"replicas":-1,"minReplicas":-5}`,
			want: []string{
				`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
				`.spec.replicas: Invalid value: -1: should be a non-negative integer`,
			}},
		{name: "CEL rule", spec: `{"replicas":1,"minReplicas":2}`,
			want: []string{`spec: Invalid value: replicas must be at least minReplicas`}},
		{name: "CEL messageExpression, fieldPath and reason", spec: `{"size":"huge","replicas":10}`,
			want: []string{`spec.size: Forbidden: a huge widget is limited to 9 replicas`}},
		{name: "list-type map duplicate key", spec: `{"ports":[{"name":"a"},{"name":"a","number":2}]}`,
			want: []string{`spec.ports[1]: Duplicate value: {"name":"a"}`}},
		{name: "list-type set duplicate", spec: `{"tags":["x","y","x"]}`,
			want: []string{`spec.tags[2]: Duplicate value: "x"`}},
		{name: "embedded resource without kind", spec: `{"template":{"apiVersion":"v1"}}`,
			want: []string{
				`spec.template.kind: Required value`,
				`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
			}},
		{name: "embedded resource bad name", spec: `{"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a/b"}}}`,
			want: []string{`spec.template.metadata.name: Invalid value: "a/b": may not contain '/'`}},
		// kind and apiVersion are the server's to check.
		{name: "kind", top: `{"apiVersion":"example.com/v2","kind":"Gadget","metadata":{"name":"w1"},"spec":{"color":"red","replicas":1,"minReplicas":0}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := obj(t, validWidget)
			if tc.top != "" {
				o = obj(t, tc.top)
			}
			if tc.spec != "" {
				for k, v := range obj(t, `{"apiVersion":"v1","kind":"X","spec":`+tc.spec+`}`)["spec"].(map[string]interface{}) {
					o["spec"].(map[string]interface{})[k] = v
				}
			}
			got := errorStrings(s.Validate(ctx, o, nil))
			if !reflect.DeepEqual(got, sorted(tc.want)) {
				t.Errorf("Validate:\n got %q\nwant %q", got, sorted(tc.want))
			}
		})
	}
}

// TestValidateRatcheting: on update, errors in unchanged fields are
// ratcheted away (schema and CEL), errors in changed ones are not, and
// transition rules see oldSelf.
func TestValidateRatcheting(t *testing.T) {
	s := widgetSchema(t)
	ctx := context.Background()
	invalidOld := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},
		"spec":{"color":"red","name":"BAD","replicas":1,"minReplicas":5,"immutable":"a"}}`
	tests := []struct {
		name string
		old  string
		new  string
		want []string
	}{
		{name: "unchanged invalid fields, metadata changed", old: invalidOld,
			new: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","labels":{"x":"y"}},
				"spec":{"color":"red","name":"BAD","replicas":1,"minReplicas":5,"immutable":"a"}}`},
		{name: "another field changed, invalid pattern kept", old: invalidOld,
			new: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},
				"spec":{"color":"green","name":"BAD","replicas":6,"minReplicas":5,"immutable":"a"}}`},
		{name: "invalid field changed", old: invalidOld,
			new: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},
				"spec":{"color":"red","name":"WORSE","replicas":6,"minReplicas":5,"immutable":"a"}}`,
			want: []string{`spec.name: Invalid value: "WORSE": spec.name in body should match '^[a-z]+$'`}},
		{name: "CEL rule on a changed object", old: invalidOld,
			new: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},
				"spec":{"color":"red","name":"BAD","replicas":2,"minReplicas":5,"immutable":"a"}}`,
			want: []string{`spec: Invalid value: replicas must be at least minReplicas`}},
		{name: "transition rule", old: validWidget[:len(validWidget)-2] + `,"immutable":"a"}}`,
			new:  validWidget[:len(validWidget)-2] + `,"immutable":"b"}}`,
			want: []string{`spec.immutable: Invalid value: "b": is immutable`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := errorStrings(s.Validate(ctx, obj(t, tc.new), obj(t, tc.old)))
			if !reflect.DeepEqual(got, sorted(tc.want)) {
				t.Errorf("Validate update:\n got %q\nwant %q", got, sorted(tc.want))
			}
		})
	}
}

func TestValidateStatus(t *testing.T) {
	s := widgetSchema(t)
	ctx := context.Background()
	old := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red","replicas":1,"minReplicas":0},"status":{"replicas":1}}`)
	good := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red","replicas":1,"minReplicas":0},"status":{"replicas":2,"ready":true}}`)
	if errs := s.ValidateStatus(ctx, good, old); len(errs) > 0 {
		t.Errorf("ValidateStatus: %v", errs.ToAggregate())
	}
	bad := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"color":"red","replicas":1,"minReplicas":0},"status":{"replicas":-2,"ready":"yes"}}`)
	got := errorStrings(s.ValidateStatus(ctx, bad, old))
	want := sorted([]string{
		`status.ready: Invalid value: "string": ready in body must be of type boolean: "string"`,
		`.status.replicas: Invalid value: -2: should be a non-negative integer`,
		`<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`,
	})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ValidateStatus:\n got %q\nwant %q", got, want)
	}
}

// TestCELRuntimeBudget: a rule that is cheap to declare but expensive to
// run is stopped by the per-call limit, with upstream's message.
func TestCELRuntimeBudget(t *testing.T) {
	crd := widgetCRD(t)
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	tags := spec.Properties["tags"]
	tags.XListType = nil
	tags.XValidations = apiextensionsv1.ValidationRules{{
		Rule: "self.all(x, self.all(y, self.all(z, x + y + z != 'never')))",
	}}
	spec.Properties["tags"] = tags
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	s, err := NewSchema(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	o := obj(t, validWidget)
	list := make([]interface{}, 300)
	for i := range list {
		list[i] = strings.Repeat("x", i%7)
	}
	o["spec"].(map[string]interface{})["tags"] = list
	errs := s.Validate(context.Background(), o, nil)
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "call cost exceeds limit for rule") {
		t.Errorf("an expensive rule was not stopped: %v", errs.ToAggregate())
	}
}

func errorStrings(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return sorted(out)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// TestNonStructuralPreserved: a CRD that predates structural schemas
// (preserveUnknownFields, a schema NewStructural refuses) still validates
// its OpenAPI rules and prunes nothing.
func TestNonStructuralPreserved(t *testing.T) {
	crd := widgetCRD(t)
	crd.Spec.PreserveUnknownFields = true
	crd.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"replicas": {Type: "integer", Minimum: ptr(float64(0))},
				// An items array cannot be made structural at all.
				"list": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{JSONSchemas: []apiextensionsv1.JSONSchemaProps{{Type: "string"}}}},
			}},
		},
	}}
	s, err := NewSchema(crd, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if s.structural != nil {
		t.Fatal("schema unexpectedly structural")
	}
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":-1,"other":{"kept":true}}}`)
	if unknown := s.Prune(o); len(unknown) != 0 {
		t.Errorf("pruned %v", unknown)
	}
	s.Default(o)
	old := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"replicas":1}}`)
	_ = s.ValidateStatus(context.Background(), o, old) // no panic without a structural schema
	want := sorted([]string{
		`spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0`,
		`.spec.replicas: Invalid value: -1: should be a non-negative integer`, // the scale subresource's
	})
	if got := errorStrings(s.Validate(context.Background(), o, old)); !reflect.DeepEqual(got, want) {
		t.Errorf("Validate update: %q, want %q", got, want)
	}
	if got := errorStrings(s.Validate(context.Background(), o, nil)); !reflect.DeepEqual(got, want) {
		t.Errorf("Validate: %q, want %q", got, want)
	}
}

// TestFromStorage: an object stored under an older schema is read back
// pruned and defaulted by the current one, with malformed metadata dropped
// and its generation repaired.
func TestFromStorage(t *testing.T) {
	s := widgetSchema(t)
	o := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget",
		"metadata":{"name":"w1","namespace":"default","labels":{"a":1},"annotations":{"k":"v"}},
		"spec":{"color":"red","removedField":true,"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":"bad"}}}}`)
	s.FromStorage(o)
	want := obj(t, `{"apiVersion":"example.com/v1","kind":"Widget",
		"metadata":{"name":"w1","namespace":"default","annotations":{"k":"v"},"generation":1},
		"spec":{"color":"red","size":"small","replicas":1,"minReplicas":0,
			"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}}`)
	if !reflect.DeepEqual(o, want) {
		got, _ := json.Marshal(o)
		w, _ := json.Marshal(want)
		t.Errorf("read back\n got %s\nwant %s", got, w)
	}
}

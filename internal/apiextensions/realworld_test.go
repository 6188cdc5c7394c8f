package apiextensions

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/yaml"
)

// readYAMLDocs decodes every YAML document of path as the API server
// decodes a JSON body into an unstructured object (integers are int64,
// which the schema validators require).
func readYAMLDocs(t testing.TB, path string) []map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []map[string]interface{}
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		docs = append(docs, u.Object)
	}
}

// loadCRDs reads the CRDs of a YAML file, defaulted and prepared for
// create as the API server does before validating them.
func loadCRDs(t testing.TB, path string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range readYAMLDocs(t, path) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		u := &unstructured.Unstructured{Object: doc}
		if err := fromUnstructured(u, crd); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		DefaultCRD(crd)
		PrepareCRDForCreate(crd)
		crds = append(crds, crd)
	}
	return crds
}

func gatewayCRDs(t testing.TB) map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	out := map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range loadCRDs(t, "testdata/gatewayapi/standard-install.yaml") {
		out[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
	}
	if len(out) != 4 {
		t.Fatalf("want the 4 Gateway API CRDs, got %d", len(out))
	}
	return out
}

// TestRealWorldCRDs takes each Gateway API CRD through everything the API
// server does with one: validation, and for every served version its
// Schema, table, selectable fields, OpenAPI documents and apply types.
func TestRealWorldCRDs(t *testing.T) {
	ctx := context.Background()
	for gk, crd := range gatewayCRDs(t) {
		t.Run(gk.Kind, func(t *testing.T) {
			if errs := ValidateCRD(ctx, crd); len(errs) > 0 {
				t.Fatalf("ValidateCRD: %v", errs.ToAggregate())
			}
			old := crd.DeepCopy()
			old.ResourceVersion = "1"
			updated := old.DeepCopy()
			if errs := ValidateCRDUpdate(ctx, updated, old); len(errs) > 0 {
				t.Fatalf("ValidateCRDUpdate (no change): %v", errs.ToAggregate())
			}
			v2, err := OpenAPIV2(crd)
			if err != nil {
				t.Fatalf("OpenAPIV2: %v", err)
			}
			served := 0
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				served++
				model := modelName(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
				if _, ok := v2.Definitions[model]; !ok {
					t.Errorf("OpenAPIV2 lacks %s", model)
				}
				s, err := NewSchema(crd, v.Name)
				if err != nil {
					t.Fatalf("NewSchema %s: %v", v.Name, err)
				}
				if s.cel == nil && (gk.Kind == "Gateway" || gk.Kind == "HTTPRoute") {
					t.Errorf("%s %s: no CEL rules compiled", gk.Kind, v.Name)
				}
				v3, err := OpenAPIV3(crd, v.Name)
				if err != nil {
					t.Fatalf("OpenAPIV3 %s: %v", v.Name, err)
				}
				if _, ok := v3.Components.Schemas[model]; !ok {
					t.Errorf("OpenAPIV3 %s lacks %s", v.Name, model)
				}
				table, err := NewTable(crd, v.Name)
				if err != nil {
					t.Fatalf("NewTable %s: %v", v.Name, err)
				}
				if got, want := len(table.Columns()), 1+max(1, len(v.AdditionalPrinterColumns)); got != want {
					t.Errorf("table of %s has %d columns, want %d", v.Name, got, want)
				}
				if _, err := SelectableFields(crd, v.Name); err != nil {
					t.Fatalf("SelectableFields %s: %v", v.Name, err)
				}
				obj := map[string]interface{}{
					"apiVersion": crd.Spec.Group + "/" + v.Name,
					"kind":       crd.Spec.Names.Kind,
					"metadata":   map[string]interface{}{"name": "x", "namespace": "default", "labels": map[string]interface{}{"a": "b"}},
				}
				typed, err := s.TypeConverter().ObjectToTyped(&unstructured.Unstructured{Object: obj})
				if err != nil {
					t.Fatalf("ObjectToTyped %s: %v", v.Name, err)
				}
				set, err := typed.ToFieldSet()
				if err != nil {
					t.Fatal(err)
				}
				// A deduced converter would not know labels is a map of
				// its own fields; the real models do.
				if !set.Has(fieldpath.MakePathOrDie("metadata", "labels", "a")) {
					t.Errorf("%s %s: type converter does not know metadata.labels: %v", gk.Kind, v.Name, set)
				}
			}
			if served == 0 {
				t.Fatal("no served version")
			}
		})
	}
}

// TestRealWorldExamples validates Gateway API's example objects: the valid
// ones pass unchanged through Prune, Default and Validate; each invalid one
// is refused.
func TestRealWorldExamples(t *testing.T) {
	ctx := context.Background()
	crds := gatewayCRDs(t)
	schemas := map[schema.GroupVersionKind]*Schema{}
	schemaFor := func(t *testing.T, obj map[string]interface{}) *Schema {
		u := &unstructured.Unstructured{Object: obj}
		gvk := u.GroupVersionKind()
		if s, ok := schemas[gvk]; ok {
			return s
		}
		crd, ok := crds[gvk.GroupKind()]
		if !ok {
			t.Fatalf("no CRD for %v", gvk)
		}
		s, err := NewSchema(crd, gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		schemas[gvk] = s
		return s
	}

	valid, _ := filepath.Glob("testdata/gatewayapi/valid/*.yaml")
	if len(valid) < 10 {
		t.Fatalf("only %d valid examples", len(valid))
	}
	for _, path := range valid {
		for _, obj := range readYAMLDocs(t, path) {
			if obj["kind"] == "Namespace" {
				continue
			}
			name := filepath.Base(path) + "/" + obj["kind"].(string)
			t.Run(name, func(t *testing.T) {
				s := schemaFor(t, obj)
				if unknown := s.Prune(obj); len(unknown) > 0 {
					t.Errorf("Prune found unknown fields %v", unknown)
				}
				s.Default(obj)
				if errs := s.Validate(ctx, obj, nil); len(errs) > 0 {
					t.Errorf("Validate: %v", errs.ToAggregate())
				}
				if errs := s.Validate(ctx, obj, obj); len(errs) > 0 {
					t.Errorf("Validate as an update: %v", errs.ToAggregate())
				}
			})
		}
	}

	invalid, _ := filepath.Glob("testdata/gatewayapi/invalid/*/*.yaml")
	if len(invalid) < 20 {
		t.Fatalf("only %d invalid examples", len(invalid))
	}
	for _, path := range invalid {
		for _, obj := range readYAMLDocs(t, path) {
			name := strings.TrimPrefix(path, "testdata/gatewayapi/invalid/")
			t.Run(name, func(t *testing.T) {
				s := schemaFor(t, obj)
				s.Prune(obj)
				s.Default(obj)
				errs := s.Validate(ctx, obj, nil)
				if len(errs) == 0 {
					t.Fatal("Validate accepted an invalid object")
				}
				t.Logf("%v", errs.ToAggregate())
			})
		}
	}
}

func modelName(group, version, kind string) string {
	parts := strings.Split(group, ".")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, ".") + "." + version + "." + kind
}

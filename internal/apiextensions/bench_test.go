package apiextensions

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// benchCRD is a CRD whose objects look like an operator's: a spec with
// scalars, a map, a list-type map of small objects, a nested object, and
// a status; withCEL adds two x-kubernetes-validations rules.
func benchCRD(withCEL bool) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer"}
	worker := apiextensionsv1.JSONSchemaProps{Type: "object", Required: []string{"name"}, Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": str, "image": str, "cpu": {XIntOrString: true}, "memory": str, "replicas": integer,
		"args": {Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &str}},
	}}
	mapType := "map"
	spec := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"image": str, "mode": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"batch"`)}, {Raw: []byte(`"stream"`)}}},
		"replicas": integer, "maxReplicas": integer, "serviceAccount": str,
		"labels":  {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
		"workers": {Type: "array", MaxItems: ptr(int64(64)), XListType: &mapType, XListMapKeys: []string{"name"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &worker}},
		"restartPolicy": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"type": str, "attempts": integer, "backoff": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"10s"`)}},
		}},
	}}
	if withCEL {
		spec.XValidations = apiextensionsv1.ValidationRules{
			{Rule: "self.replicas <= self.maxReplicas", Message: "replicas must not exceed maxReplicas"},
			{Rule: "self.workers.all(w, w.replicas >= 0)", Message: "worker replicas must be non-negative"},
		}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "jobs.bench.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "jobs", Singular: "job", Kind: "Job", ListKind: "JobList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec":   spec,
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"phase": str, "ready": integer}},
					}}},
			}},
		},
	}
	DefaultCRD(crd)
	PrepareCRDForCreate(crd)
	return crd
}

func ptr[T any](v T) *T { return &v }

// benchObject is a ~2 KB object of benchCRD.
func benchObject(tb testing.TB) map[string]interface{} {
	tb.Helper()
	workers := make([]interface{}, 10)
	for i := range workers {
		workers[i] = map[string]interface{}{
			"name": fmt.Sprintf("worker-%d", i), "image": "registry.example.com/team/worker:v1.2.3",
			"cpu": "500m", "memory": "1Gi", "replicas": int64(2), "args": []interface{}{"--mode=fast", "--verbose"},
		}
	}
	o := map[string]interface{}{
		"apiVersion": "bench.example.com/v1", "kind": "Job",
		"metadata": map[string]interface{}{
			"name": "job-1", "namespace": "team-a", "uid": "8f2c5f9e-8a55-4d8e-9d5c-4c8c2f0a1b2c", "resourceVersion": "12345",
			"labels": map[string]interface{}{"app": "pipeline", "tier": "batch"},
		},
		"spec": map[string]interface{}{
			"image": "registry.example.com/team/driver:v1.2.3", "mode": "batch", "replicas": int64(3), "maxReplicas": int64(10),
			"serviceAccount": "pipeline", "labels": map[string]interface{}{"owner": "team-a", "cost-center": "1234"},
			"workers":       workers,
			"restartPolicy": map[string]interface{}{"type": "OnFailure", "attempts": int64(3)},
		},
		"status": map[string]interface{}{"phase": "Running", "ready": int64(8)},
	}
	js, err := json.Marshal(o)
	if err != nil {
		tb.Fatal(err)
	}
	if n := len(js); n < 1800 || n > 2400 {
		tb.Fatalf("benchmark object is %d bytes, want ~2 KB", n)
	}
	return o
}

// BenchmarkSchemaWrite is the per-request cost of a custom resource write:
// Prune, Default and Validate (create, then update against the same
// object) of a ~2 KB object, without and with two CEL rules. The copy
// sub-benchmark is the cost of the deep copy every iteration makes (the
// functions mutate their input), to subtract.
func BenchmarkSchemaWrite(b *testing.B) {
	ctx := context.Background()
	base := benchObject(b)
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = runtime.DeepCopyJSON(base)
		}
	})
	for _, withCEL := range []bool{false, true} {
		s, err := NewSchema(benchCRD(withCEL), "v1")
		if err != nil {
			b.Fatal(err)
		}
		name := "noCEL"
		if withCEL {
			name = "twoCEL"
		}
		b.Run(name+"/create", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				o := runtime.DeepCopyJSON(base)
				s.Prune(o)
				s.Default(o)
				if errs := s.Validate(ctx, o, nil); len(errs) > 0 {
					b.Fatal(errs.ToAggregate())
				}
			}
		})
		b.Run(name+"/update", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				o := runtime.DeepCopyJSON(base)
				s.Prune(o)
				s.Default(o)
				if errs := s.Validate(ctx, o, base); len(errs) > 0 {
					b.Fatal(errs.ToAggregate())
				}
			}
		})
	}
}

// BenchmarkSelectableFields is the per-write cost of computing a custom
// resource's selectable fields for the watch cache.
func BenchmarkSelectableFields(b *testing.B) {
	crd := widgetCRD(b)
	fn, err := SelectableFields(crd, "v1")
	if err != nil {
		b.Fatal(err)
	}
	o := &unstructured.Unstructured{Object: obj(b, validWidget)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = fn(o)
	}
}

// BenchmarkSchemaStages splits a create's cost by stage (each on a fresh
// copy, the copy included; see BenchmarkSchemaWrite/copy).
func BenchmarkSchemaStages(b *testing.B) {
	ctx := context.Background()
	base := benchObject(b)
	s, err := NewSchema(benchCRD(true), "v1")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("prune", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.Prune(runtime.DeepCopyJSON(base))
		}
	})
	b.Run("default", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.Default(runtime.DeepCopyJSON(base))
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = s.Validate(ctx, base, nil)
		}
	})
	b.Run("validateUpdate", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = s.Validate(ctx, base, base)
		}
	})
}

// BenchmarkInstall is the cost of what installing a CRD version builds
// here: its Schema (CEL compiled), validation of the CRD, its OpenAPI v3
// document and its apply type converter, for a small CRD without CEL
// rules, a small one with four (widgets) and a large one with many
// (Gateway API's HTTPRoute, ~4,700 lines of YAML).
func BenchmarkInstall(b *testing.B) {
	ctx := context.Background()
	var httproute *apiextensionsv1.CustomResourceDefinition
	for _, crd := range gatewayCRDs(b) {
		if crd.Spec.Names.Kind == "HTTPRoute" {
			httproute = crd
		}
	}
	for _, tc := range []struct {
		name    string
		crd     *apiextensionsv1.CustomResourceDefinition
		version string
	}{{"noCEL", benchCRD(false), "v1"}, {"widget", widgetCRD(b), "v1"}, {"httproute", httproute, "v1"}} {
		b.Run(tc.name+"/NewSchema", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := NewSchema(tc.crd, tc.version); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/ValidateCRD", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if errs := ValidateCRD(ctx, tc.crd); len(errs) > 0 {
					b.Fatal(errs.ToAggregate())
				}
			}
		})
		b.Run(tc.name+"/OpenAPIV3", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := OpenAPIV3(tc.crd, tc.version); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tc.name+"/TypeConverter", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := newTypeConverter(tc.crd); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTableCells is the per-row cost of kubectl get on a custom
// resource with three printer columns.
func BenchmarkTableCells(b *testing.B) {
	table, err := NewTable(widgetCRD(b), "v1")
	if err != nil {
		b.Fatal(err)
	}
	o := &unstructured.Unstructured{Object: obj(b, validWidget)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = table.Cells(o)
	}
}

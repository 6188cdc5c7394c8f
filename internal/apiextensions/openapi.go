package apiextensions

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPIV3 is the OpenAPI v3 document of crd's version (what
// /openapi/v3/apis/GROUP/VERSION merges in), built as upstream's openapiv3
// controller does (selectable fields included; CustomResourceFieldSelectors
// is GA).
func OpenAPIV3(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, error) {
	if !hasVersion(crd, version) {
		return nil, fmt.Errorf("apiextensions: %s has no version %q", crd.Name, version)
	}
	doc, err := builder.BuildOpenAPIV3(crd, version, builder.Options{V2: false, IncludeSelectableFields: true})
	if err != nil {
		return nil, fmt.Errorf("apiextensions: OpenAPI v3 of %s %s: %w", crd.Name, version, err)
	}
	return doc, nil
}

// OpenAPIV2 is the OpenAPI v2 document of crd's served versions (what
// /openapi/v2 merges in), built as upstream's openapi controller does: one
// document per served version, defaults pruned (v2 clients choke on them),
// merged.
func OpenAPIV2(crd *apiextensionsv1.CustomResourceDefinition) (*spec.Swagger, error) {
	merged := &spec.Swagger{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		doc, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
		if err != nil {
			return nil, fmt.Errorf("apiextensions: OpenAPI v2 of %s %s: %w", crd.Name, v.Name, err)
		}
		doc.Definitions = handler.PruneDefaults(doc.Definitions)
		if merged, err = builder.MergeSpecs(merged, doc); err != nil {
			return nil, fmt.Errorf("apiextensions: merging the OpenAPI v2 of %s %s: %w", crd.Name, v.Name, err)
		}
	}
	return merged, nil
}

// newTypeConverter is upstream's buildOpenAPIModelsForApply and
// NewTypeConverter: the v3 models of every version of crd, defaults kept
// (server-side apply does not read them), merged. Upstream also merges in
// the static spec of the built-in kinds; a CRD's documents already carry
// every definition they reference (ObjectMeta and its parts), which is all
// its objects need.
func newTypeConverter(crd *apiextensionsv1.CustomResourceDefinition) (managedfields.TypeConverter, error) {
	specs := make([]*spec3.OpenAPI, 0, len(crd.Spec.Versions))
	for _, v := range crd.Spec.Versions {
		doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, fmt.Errorf("apiextensions: OpenAPI models of %s %s: %w", crd.Name, v.Name, err)
		}
		specs = append(specs, doc)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: merging the OpenAPI models of %s: %w", crd.Name, err)
	}
	tc, err := managedfields.NewTypeConverter(merged.Components.Schemas, crd.Spec.PreserveUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: type converter of %s: %w", crd.Name, err)
	}
	return tc, nil
}

func hasVersion(crd *apiextensionsv1.CustomResourceDefinition, version string) bool {
	for _, v := range crd.Spec.Versions {
		if v.Name == version {
			return true
		}
	}
	return false
}

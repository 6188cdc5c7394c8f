package openapi

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/builder3"
)

// TypeConverter builds the structured-merge-diff type converter of the
// served kinds (and autoscaling/v1 Scale) from the same definitions and
// GroupVersionKind extensions the documents carry, as kube-apiserver does for
// server-side apply. Building takes a noticeable fraction of a second: call it
// once and share the result, which is safe for concurrent use.
func (o *OpenAPI) TypeConverter() (managedfields.TypeConverter, error) {
	names := []string{modelScale}
	for _, r := range o.cfg.Resources {
		names = append(names, r.ModelName, r.ListModelName)
	}
	schemas, err := builder3.BuildOpenAPIDefinitionsForResources(o.v3Config(), names...)
	if err != nil {
		return nil, fmt.Errorf("openapi: collecting definitions for the type converter: %w", err)
	}
	tc, err := managedfields.NewTypeConverter(schemas, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: building the type converter: %w", err)
	}
	return tc, nil
}

package apiextensions

// SEAM: the exported API the API server codes against. The bodies here
// are placeholders (permissive: no pruning, no defaults, no validation)
// that the apiextensions helper replaces with the real implementation;
// the signatures are the contract. This file is deleted on merge.

import (
	"context"
	"errors"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Schema is one served version of a CRD: its structural schema compiled
// once (CEL programs included) and used for every write.
type Schema struct{}

// NewSchema compiles crd's schema for version. It fails when crd does not
// serve version.
func NewSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	return &Schema{}, nil
}

// Prune removes the fields the schema does not know (upstream's structural
// pruning, x-kubernetes-preserve-unknown-fields and embedded resources
// respected) and returns their paths, for fieldValidation=Warn/Strict.
func (s *Schema) Prune(obj map[string]interface{}) []string { return nil }

// Default applies the schema's defaults in place.
func (s *Schema) Default(obj map[string]interface{}) {}

// Validate checks obj against the schema and its x-kubernetes-validations
// CEL rules; old is nil on create, and on update errors in fields that
// did not change are ratcheted away as upstream does. ObjectMeta is the
// server's job, not this one's.
func (s *Schema) Validate(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	return nil
}

// TypeConverter is the schema as server-side apply's types.
func (s *Schema) TypeConverter() managedfields.TypeConverter {
	return managedfields.NewDeducedTypeConverter()
}

// Table is kubectl's columns for a version: NAME, the
// additionalPrinterColumns, and AGE when none is given. It satisfies
// internal/registry's TableConvertor.
type Table struct{}

// NewTable builds the columns of crd's version.
func NewTable(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Table, error) {
	return &Table{}, nil
}

// Columns are the table's column definitions.
func (t *Table) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name"}}
}

// Cells are one object's row.
func (t *Table) Cells(obj runtime.Object) []interface{} { return []interface{}{""} }

// SelectableFields returns the field-selector values of an object of
// crd's version: the version's selectableFields (metadata.name and
// metadata.namespace are the server's).
func SelectableFields(crd *apiextensionsv1.CustomResourceDefinition, version string) (func(obj runtime.Object) fields.Set, error) {
	return func(runtime.Object) fields.Set { return fields.Set{} }, nil
}

// OpenAPIV3 is the OpenAPI v3 document of crd's version (what
// /openapi/v3/apis/GROUP/VERSION merges in).
func OpenAPIV3(crd *apiextensionsv1.CustomResourceDefinition, version string) (*spec3.OpenAPI, error) {
	return nil, errors.New("apiextensions: OpenAPI not built yet")
}

// OpenAPIV2 is the OpenAPI v2 document of crd's served versions (what
// /openapi/v2 merges in).
func OpenAPIV2(crd *apiextensionsv1.CustomResourceDefinition) (*spec.Swagger, error) {
	return nil, errors.New("apiextensions: OpenAPI not built yet")
}

// DefaultCRD applies upstream's defaults to a CRD (SetObjectDefaults).
func DefaultCRD(crd *apiextensionsv1.CustomResourceDefinition) {}

// ValidateCRD validates a new CRD as upstream does (names, versions,
// structural schema, CEL rules and their cost), with upstream's messages.
func ValidateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	return nil
}

// ValidateCRDUpdate validates an update of old to crd (immutable scope
// and group, storedVersions, ratcheted schema checks).
func ValidateCRDUpdate(ctx context.Context, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	return nil
}

// ValidateCRDStatusUpdate validates a write to a CRD's status.
func ValidateCRDStatusUpdate(ctx context.Context, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	return nil
}

// ConverterOptions configure a Converter.
type ConverterOptions struct {
	// ResolveService returns the address (host:port) a webhook's service
	// reference is reached at; the API server resolves it to an endpoint.
	ResolveService func(ctx context.Context, namespace, name string, port int32) (string, error)
}

// Converter converts custom resources between crd's versions: strategy
// None rewrites apiVersion; Webhook sends a ConversionReview (v1) over
// HTTPS with the CRD's caBundle.
type Converter struct{}

// NewConverter builds crd's converter.
func NewConverter(crd *apiextensionsv1.CustomResourceDefinition, opts ConverterOptions) (*Converter, error) {
	return &Converter{}, nil
}

// Convert converts objs to version to, in order, in one call for a
// webhook. Objects already at to are returned as they are.
func (c *Converter) Convert(ctx context.Context, objs []*unstructured.Unstructured, to schema.GroupVersion) ([]*unstructured.Unstructured, error) {
	for _, o := range objs {
		o.SetAPIVersion(to.String())
	}
	return objs, nil
}

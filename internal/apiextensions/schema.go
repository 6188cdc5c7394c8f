package apiextensions

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/klog/v2"
)

// Schema is one served version of a CRD: its structural schema compiled
// once (CEL programs included) and used for every write. It is immutable
// after NewSchema and safe for concurrent use.
type Schema struct {
	gvk schema.GroupVersionKind

	// structural is the version's structural schema with unpruned defaults
	// removed, as upstream serves it; nil when the version has no schema or
	// one with no structural form (both only possible with
	// spec.preserveUnknownFields).
	structural *structuralschema.Structural
	// preserveUnknownFields is the CRD's spec.preserveUnknownFields: when
	// set, nothing is pruned at the root (ObjectMeta is still coerced).
	preserveUnknownFields bool
	// features says which of the per-object walks the schema can need at
	// all; the walks allocate per field, so a schema without embedded
	// resources, list sets or maps, or defaults skips them.
	features schemaFeatures

	// validator is the OpenAPI validator of the whole object; status the
	// one of .status alone (nil without a status subresource or a status
	// property), which status writes use as upstream's status strategy.
	validator       apiservervalidation.SchemaValidator
	statusValidator apiservervalidation.SchemaValidator
	// cel holds the compiled x-kubernetes-validations programs; nil when the
	// schema has none.
	cel *cel.Validator
	// scale is the version's scale subresource, whose replica paths are
	// validated on every write as upstream does; nil without one.
	scale *apiextensionsinternal.CustomResourceSubresourceScale

	// crd is a copy of the CRD the type converter is built from on first
	// use: building it runs the OpenAPI builder, too slow to pay for every
	// CRD version that is never applied to.
	crd    *apiextensionsv1.CustomResourceDefinition
	tcOnce sync.Once
	tc     managedfields.TypeConverter
}

// NewSchema compiles crd's schema for version. It fails when crd does not
// serve version.
func NewSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	if !apihelpers.HasServedCRDVersion(crd, version) {
		return nil, fmt.Errorf("apiextensions: %s does not serve version %q", crd.Name, version)
	}
	return newSchema(crd, version)
}

// NewStoredSchema is NewSchema for a version that is served or is the
// storage version: objects read from storage are coerced and defaulted by
// the storage version's schema (FromStorage) before conversion, as
// upstream's storage decoder does, even when that version is no longer
// served.
func NewStoredSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	for _, v := range crd.Spec.Versions {
		if v.Name == version && (v.Served || v.Storage) {
			return newSchema(crd, version)
		}
	}
	return nil, fmt.Errorf("apiextensions: %s neither serves nor stores version %q", crd.Name, version)
}

func newSchema(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Schema, error) {
	s := &Schema{
		gvk:                   schema.GroupVersionKind{Group: crd.Spec.Group, Version: version, Kind: crd.Spec.Names.Kind},
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
		crd:                   crd.DeepCopy(),
	}

	v1Validation, err := apihelpers.GetSchemaForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: schema of %s %s: %w", crd.Name, version, err)
	}
	var props *apiextensionsinternal.JSONSchemaProps
	if v1Validation != nil {
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1Validation, internal, nil); err != nil {
			return nil, fmt.Errorf("apiextensions: converting the schema of %s %s: %w", crd.Name, version, err)
		}
		props = internal.OpenAPIV3Schema
	}
	if props != nil {
		st, err := structuralschema.NewStructural(props)
		switch {
		case err != nil && !crd.Spec.PreserveUnknownFields:
			// CRD validation refuses non-structural schemas unless
			// preserveUnknownFields is set, so this CRD skipped validation.
			return nil, fmt.Errorf("apiextensions: schema of %s %s is not structural: %w", crd.Name, version, err)
		case err == nil:
			// Defaults are shared with props; prune a copy, as upstream does.
			st = st.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(st); err != nil {
				return nil, fmt.Errorf("apiextensions: pruning the defaults of %s %s: %w", crd.Name, version, err)
			}
			s.structural = st
			s.features = featuresOf(st)
		}
	}

	if s.validator, _, err = apiservervalidation.NewSchemaValidator(props); err != nil {
		return nil, fmt.Errorf("apiextensions: OpenAPI validator of %s %s: %w", crd.Name, version, err)
	}
	subresources, err := apihelpers.GetSubresourcesForVersion(crd, version)
	if err != nil {
		return nil, fmt.Errorf("apiextensions: subresources of %s %s: %w", crd.Name, version, err)
	}
	if subresources != nil && subresources.Status != nil && props != nil {
		if status, ok := props.Properties["status"]; ok {
			if s.statusValidator, _, err = apiservervalidation.NewSchemaValidator(&status); err != nil {
				return nil, fmt.Errorf("apiextensions: OpenAPI validator of %s %s status: %w", crd.Name, version, err)
			}
		}
	}
	if subresources != nil && subresources.Scale != nil {
		s.scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, s.scale, nil); err != nil {
			return nil, fmt.Errorf("apiextensions: converting the scale subresource of %s %s: %w", crd.Name, version, err)
		}
	}
	// NewValidator compiles every rule now; the per-call limit bounds one
	// rule's evaluation, the runtime budget (in Validate) the whole object.
	s.cel = cel.NewValidator(s.structural, true, celconfig.PerCallLimit)
	return s, nil
}

// GroupVersionKind is the kind the schema validates.
func (s *Schema) GroupVersionKind() schema.GroupVersionKind { return s.gvk }

// Prune removes the fields the schema does not know (upstream's structural
// pruning, x-kubernetes-preserve-unknown-fields and embedded resources
// respected) and returns their paths, for fieldValidation=Warn/Strict.
//
// As upstream's decoder does, it also coerces ObjectMeta: unknown fields of
// metadata (at the root and in embedded resources) are dropped and
// reported, and nulls in non-nullable fields without a default are removed.
// Metadata of the wrong type is left for Validate (embedded) and the
// server's ObjectMeta handling (root) to report.
func (s *Schema) Prune(obj map[string]interface{}) []string {
	return s.coerce(obj, false)
}

// FromStorage is what upstream's storage decoder does to a custom resource
// read back from storage, so that a schema change applies to objects
// written before it: unknown fields are pruned by the current schema,
// metadata fields of the wrong type are dropped (root and embedded), a
// missing generation is repaired to 1, and defaults are applied.
func (s *Schema) FromStorage(obj map[string]interface{}) {
	s.coerce(obj, true)
	s.Default(obj)
}

// coerce is upstream's unstructuredSchemaCoercer: for a write it reports
// unknown fields and leaves malformed metadata in place; for a stored
// object it drops malformed metadata and repairs the generation.
func (s *Schema) coerce(obj map[string]interface{}, stored bool) []string {
	var unknown []string
	kind, hasKind := obj["kind"]
	apiVersion, hasAPIVersion := obj["apiVersion"]
	meta, hasMeta, metaUnknown, err := schemaobjectmeta.GetObjectMetaWithOptions(obj, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     stored,
		ReturnUnknownFieldPaths: !stored,
	})
	if err != nil || meta == nil {
		hasMeta = false // malformed: keep it as sent for the server to refuse
	}
	unknown = append(unknown, metaUnknown...)

	if !s.preserveUnknownFields {
		unknown = append(unknown, structuralpruning.PruneWithOptions(obj, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: !stored})...)
		if s.structural != nil && hasNull(obj) {
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, s.structural)
		}
	}
	// Below the root, only embedded resources are coerced.
	if s.features.embedded {
		if _, paths := schemaobjectmeta.CoerceWithOptions(nil, obj, s.structural, false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields:       stored,
			ReturnUnknownFieldPaths: !stored,
		}); len(paths) > 0 {
			unknown = append(unknown, paths...)
		}
	}
	if stored && hasMeta && meta.Generation == 0 {
		meta.Generation = 1 // objects written before generation was kept
	}

	// Pruning at the root keeps kind, apiVersion and metadata; restore them
	// as upstream does, metadata in its coerced form.
	if hasKind {
		obj["kind"] = kind
	}
	if hasAPIVersion {
		obj["apiVersion"] = apiVersion
	}
	if hasMeta {
		if err := schemaobjectmeta.SetObjectMeta(obj, meta); err != nil {
			klog.V(2).InfoS("apiextensions: could not write back coerced metadata", "kind", s.gvk, "err", err)
		}
	}
	return unknown
}

// Default applies the schema's defaults in place.
func (s *Schema) Default(obj map[string]interface{}) {
	if s.features.defaults {
		structuraldefaulting.Default(obj, s.structural)
	}
}

// TypeConverter is the schema as server-side apply's types: the OpenAPI
// models of all of the CRD's versions, as upstream builds them, so that
// managedFields recorded at another version can be read. If the models
// cannot be built, it is upstream's fallback, a deduced converter.
func (s *Schema) TypeConverter() managedfields.TypeConverter {
	s.tcOnce.Do(func() {
		tc, err := newTypeConverter(s.crd)
		if err != nil {
			klog.ErrorS(err, "apiextensions: building the server-side apply types, falling back to deduced types", "crd", s.crd.Name)
			tc = managedfields.NewDeducedTypeConverter()
		}
		s.tc = tc
	})
	return s.tc
}

// schemaFeatures records what a structural schema contains anywhere.
type schemaFeatures struct {
	embedded bool // x-kubernetes-embedded-resource
	listSets bool // x-kubernetes-list-type set or map
	defaults bool // default
}

func featuresOf(s *structuralschema.Structural) schemaFeatures {
	var f schemaFeatures
	var walk func(s *structuralschema.Structural)
	walk = func(s *structuralschema.Structural) {
		if s == nil {
			return
		}
		f.embedded = f.embedded || s.XEmbeddedResource
		f.defaults = f.defaults || s.Default.Object != nil
		if t := s.XListType; t != nil && (*t == "set" || *t == "map") {
			f.listSets = true
		}
		walk(s.Items)
		if s.AdditionalProperties != nil {
			walk(s.AdditionalProperties.Structural)
		}
		for k := range s.Properties {
			p := s.Properties[k]
			walk(&p)
		}
	}
	walk(s)
	return f
}

// hasNull reports whether a JSON value holds a null anywhere; pruning of
// nulls walks the schema for every field, which most objects never need.
func hasNull(v interface{}) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]interface{}:
		for _, e := range v {
			if hasNull(e) {
				return true
			}
		}
	case []interface{}:
		for _, e := range v {
			if hasNull(e) {
				return true
			}
		}
	}
	return false
}

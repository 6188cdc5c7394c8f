// Package apiextensions is what a CustomResourceDefinition means beyond
// its object: the structural schema of each served version (pruning of
// unknown fields, defaulting, OpenAPI validation and CEL rules with
// ratcheting), the validation of CRDs themselves, the OpenAPI documents
// and server-side-apply types derived from a schema, kubectl's table
// columns (additionalPrinterColumns), selectable fields, and conversion
// between a CRD's versions (None and Webhook).
//
// It is built on upstream's k8s.io/apiextensions-apiserver libraries; the
// API server (internal/apiserver) serves custom resources with it, and the
// registry (internal/registry) validates CRDs with it. It knows nothing of
// storage or HTTP routing.
//
// Files by concern, each the upstream piece it wraps:
//
//	schema.go        NewSchema / NewStoredSchema (structural schema, defaults
//	                 pruned, CEL compiled once),
//	                 Prune (pkg/apiserver/schema/pruning and objectmeta, as the
//	                 custom resource decoder does), Default (schema/defaulting),
//	                 FromStorage (what the storage decoder does on read)
//	validation.go    Validate / ValidateStatus: upstream's customresource
//	                 strategy without ObjectMeta (validation.NewSchemaValidator,
//	                 ratcheting, listtype, embedded resources, scale paths, CEL
//	                 under RuntimeCELCostBudget)
//	crdvalidation.go DefaultCRD, PrepareCRDFor{Create,Update}, ValidateCRD*
//	                 (pkg/apis/apiextensions/validation on the internal types)
//	openapi.go       OpenAPIV3/V2 (pkg/controller/openapi/builder, as upstream's
//	                 openapi controllers call it) and the apply type converter
//	table.go         Table (registry/customresource/tableconvertor) and
//	                 SelectableFields (as upstream's strategy formats them)
//	conversion.go    Converter (pkg/apiserver/conversion's CR converter), and
//	                 its ObjectConvertor for the apply field manager
//	warnings.go      DeprecationWarning (the custom resource handler's) and
//	                 CRDWarnings (the CRD strategy's)
//
// Where the libraries are not used as they are:
//
//   - Objects are JSON as k8s.io/apimachinery decodes it into unstructured
//     (integers int64); float64 integers fail the schema's integer checks
//     and CEL, as upstream.
//   - Prune leaves root metadata it cannot parse as sent (upstream's decoder
//     fails there); the server's ObjectMeta handling refuses it. Embedded
//     metadata of the wrong type is left for Validate, which reports it.
//   - Upstream's conversion webhook call has neither a timeout nor the
//     request's context; the Converter bounds each call
//     (ConverterOptions.Timeout, default 30s) and returns when the caller's
//     context ends.
//   - The type converter is built from the CRD's own OpenAPI models (which
//     carry ObjectMeta and every definition they reference) rather than
//     merged with the built-in kinds' static spec, and lazily on first use,
//     since building it runs the OpenAPI builder.
//   - Validate leaves kind and apiVersion to the server, as it does
//     ObjectMeta; upstream's strategy checks them first.
//   - On update, a schema without a structural form (preserveUnknownFields
//     from before structural schemas) is validated whole: upstream's
//     ratcheting would dereference the missing structural schema.
//   - Schemas without embedded resources, list sets/maps or defaults skip
//     those walks; the results are the same.
package apiextensions

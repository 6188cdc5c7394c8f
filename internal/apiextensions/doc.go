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
package apiextensions

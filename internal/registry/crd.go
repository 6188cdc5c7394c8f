package registry

import (
	"context"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/apiextensions"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// apiextensionsGroup serves CustomResourceDefinitions.
const apiextensionsGroup = "apiextensions.k8s.io"

// CRDCleanupFinalizer is the finalizer the server puts on every CRD: a
// deleted CRD stays until its custom resources are gone (upstream's
// finalizer controller).
const CRDCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

func crdResource(c clock) *Resource {
	gv := v1(apiextensionsGroup)
	s := crdStrategy{}
	return &Resource{
		GroupVersion:     gv,
		Kind:             "CustomResourceDefinition",
		Resource:         "customresourcedefinitions",
		SingularName:     "customresourcedefinition",
		ShortNames:       []string{"crd", "crds"},
		Categories:       []string{"api-extensions"},
		Verbs:            allVerbs(),
		Subresources:     []string{"status"},
		New:              func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
		NewList:          func() runtime.Object { return &apiextensionsv1.CustomResourceDefinitionList{} },
		Strategy:         s,
		Status:           s,
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		// Upstream serves CRDs with the default table convertor: the
		// name and the creation time.
		Table: table[*apiextensionsv1.CustomResourceDefinition]{
			columns: []metav1.TableColumnDefinition{nameColumn(), col("Created At", "date", metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"])},
			cells: func(o *apiextensionsv1.CustomResourceDefinition) []interface{} {
				return []interface{}{o.Name, o.CreationTimestamp.UTC().Format(time.RFC3339)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "customresourcedefinitions"),
	}
}

// crdStrategy is upstream's customresourcedefinition strategy: status is
// the server's, generation follows the spec, storedVersions always holds
// the storage version; the rules themselves are package apiextensions'.
type crdStrategy struct{}

var (
	_ Strategy       = crdStrategy{}
	_ StatusStrategy = crdStrategy{}
)

func (crdStrategy) PrepareForCreate(_ context.Context, o runtime.Object) {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	apiextensions.DefaultCRD(crd)
	apiextensions.PrepareCRDForCreate(crd)
}

func (crdStrategy) PrepareForUpdate(_ context.Context, o, oldObj runtime.Object) {
	crd, old := o.(*apiextensionsv1.CustomResourceDefinition), oldObj.(*apiextensionsv1.CustomResourceDefinition)
	apiextensions.DefaultCRD(crd)
	apiextensions.PrepareCRDForUpdate(crd, old)
}

func (crdStrategy) Validate(ctx context.Context, o runtime.Object) field.ErrorList {
	crd := o.(*apiextensionsv1.CustomResourceDefinition)
	for _, w := range apiextensions.CRDWarnings(crd, nil) {
		request.AddWarning(ctx, w)
	}
	errs := apivalidation.ValidateObjectMetaAccessor(crd, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return mergeErrors(errs, apiextensions.ValidateCRD(ctx, crd))
}

func (crdStrategy) ValidateUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	crd, old := o.(*apiextensionsv1.CustomResourceDefinition), oldObj.(*apiextensionsv1.CustomResourceDefinition)
	for _, w := range apiextensions.CRDWarnings(crd, old) {
		request.AddWarning(ctx, w)
	}
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(crd, old, field.NewPath("metadata"))
	return mergeErrors(errs, apiextensions.ValidateCRDUpdate(ctx, crd, old))
}

func (crdStrategy) PrepareForStatusUpdate(_ context.Context, o, oldObj runtime.Object) {
	crd, old := o.(*apiextensionsv1.CustomResourceDefinition), oldObj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Spec = *old.Spec.DeepCopy()
	crd.Generation = old.Generation
}

func (crdStrategy) ValidateStatusUpdate(ctx context.Context, o, oldObj runtime.Object) field.ErrorList {
	crd, old := o.(*apiextensionsv1.CustomResourceDefinition), oldObj.(*apiextensionsv1.CustomResourceDefinition)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(crd, old, field.NewPath("metadata"))
	return mergeErrors(errs, apiextensions.ValidateCRDStatusUpdate(ctx, crd, old))
}

// mergeErrors appends more to errs, leaving out what errs already holds:
// upstream's CRD validation checks ObjectMeta itself, and the server's own
// metadata check must not report the same problem twice.
func mergeErrors(errs, more field.ErrorList) field.ErrorList {
	type key struct {
		typ           field.ErrorType
		field, detail string
	}
	seen := make(map[key]bool, len(errs))
	for _, e := range errs {
		seen[key{e.Type, e.Field, e.Detail}] = true
	}
	for _, e := range more {
		if !seen[key{e.Type, e.Field, e.Detail}] {
			errs = append(errs, e)
		}
	}
	return errs
}

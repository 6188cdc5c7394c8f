package apiextensions

import (
	"context"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultCRD applies upstream's defaults to a CRD (SetObjectDefaults):
// singular and listKind names, the None conversion strategy, service port
// 443, and storedVersions when empty.
func DefaultCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
}

// PrepareCRDForCreate is upstream's CRD strategy PrepareForCreate: a new
// CRD's status is the server's (cleared, storedVersions set to the storage
// version) and its generation is 1.
func PrepareCRDForCreate(crd *apiextensionsv1.CustomResourceDefinition) {
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	crd.Generation = 1
	addStorageVersion(crd)
}

// PrepareCRDForUpdate is upstream's CRD strategy PrepareForUpdate: status
// is kept from old, the generation moves when the spec changes, and a new
// storage version joins storedVersions.
func PrepareCRDForUpdate(crd, old *apiextensionsv1.CustomResourceDefinition) {
	crd.Status = *old.Status.DeepCopy()
	crd.Generation = old.Generation
	if !apiequality.Semantic.DeepEqual(old.Spec, crd.Spec) {
		crd.Generation = old.Generation + 1
	}
	addStorageVersion(crd)
}

func addStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			if !apihelpers.IsStoredVersion(crd, v.Name) {
				crd.Status.StoredVersions = append(crd.Status.StoredVersions, v.Name)
			}
			return
		}
	}
}

// ValidateCRD validates a new CRD as upstream does (names, versions,
// structural schema, CEL rules and their cost), with upstream's messages.
// crd should be defaulted (DefaultCRD) and prepared (PrepareCRDForCreate)
// first, as upstream's create handler does.
func ValidateCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	internal, errs := toInternal(crd)
	if errs != nil {
		return errs
	}
	return crdvalidation.ValidateCustomResourceDefinition(ctx, internal)
}

// ValidateCRDUpdate validates an update of old to crd (immutable scope
// and group, storedVersions, ratcheted schema checks).
func ValidateCRDUpdate(ctx context.Context, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	internal, errs := toInternal(crd)
	if errs != nil {
		return errs
	}
	internalOld, errs := toInternal(old)
	if errs != nil {
		return errs
	}
	return crdvalidation.ValidateCustomResourceDefinitionUpdate(ctx, internal, internalOld)
}

// ValidateCRDStatusUpdate validates a write to a CRD's status.
func ValidateCRDStatusUpdate(ctx context.Context, crd, old *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	internal, errs := toInternal(crd)
	if errs != nil {
		return errs
	}
	internalOld, errs := toInternal(old)
	if errs != nil {
		return errs
	}
	return crdvalidation.ValidateUpdateCustomResourceDefinitionStatus(ctx, internal, internalOld)
}

// toInternal converts crd to the internal version upstream's validation
// reads. The generated conversion is the one the install scheme registers;
// calling it directly (its scope is unused) spares building a scheme.
// Conversion only fails on a default that is not JSON, reported where
// upstream's decoder would.
func toInternal(crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsinternal.CustomResourceDefinition, field.ErrorList) {
	out := &apiextensionsinternal.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, out, nil); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())}
	}
	return out, nil
}

package apiextensions

import (
	"context"
	"fmt"
	"math"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
)

// Validate checks obj against the schema and its x-kubernetes-validations
// CEL rules; old is nil on create, and on update errors in fields that
// did not change are ratcheted away as upstream does. ObjectMeta is the
// server's job, not this one's, and so are kind and apiVersion (upstream's
// "must be KIND" checks; the API server makes them).
//
// It is upstream's custom resource strategy Validate/ValidateUpdate without
// those: OpenAPI validation, the scale subresource's replica paths,
// embedded resources, list-type set and map invariants, then the CEL rules
// under the runtime cost budget (skipped, with upstream's message, when an
// error already makes them meaningless).
func (s *Schema) Validate(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	var celOpts []cel.Option
	switch {
	case old == nil:
		errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, s.validator)...)
	case s.structural == nil:
		// Ratcheting correlates through the structural schema; a schema
		// that has none (preserveUnknownFields from before structural
		// schemas) is validated whole, as the status strategy does.
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, s.validator)...)
	default:
		correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: s.structural})
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, s.validator, apiservervalidation.WithRatcheting(correlated))...)
		celOpts = append(celOpts, cel.WithRatcheting(correlated))
	}
	errs = append(errs, s.validateScaleSpec(obj)...)
	errs = append(errs, s.validateScaleStatus(obj)...)
	if s.features.embedded {
		errs = append(errs, schemaobjectmeta.Validate(ctx, nil, obj, s.structural, false)...)
	}
	if s.features.listSets {
		if newErrs := structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj); len(newErrs) > 0 {
			// Ratcheted: an old object that already broke the invariant
			// may keep doing so.
			if old == nil || len(structurallisttype.ValidateListSetsAndMaps(nil, s.structural, old)) == 0 {
				errs = append(errs, newErrs...)
			}
		}
	}
	return s.validateCEL(ctx, errs, obj, old, celOpts)
}

// ValidateStatus checks a write to the status subresource as upstream's
// status strategy does: only .status against its own schema (ratcheted),
// the scale status paths, list-type invariants newly broken, and the CEL
// rules of the whole object. Like Validate, it leaves ObjectMeta, kind and
// apiVersion to the server.
func (s *Schema) ValidateStatus(ctx context.Context, obj, old map[string]interface{}) field.ErrorList {
	correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: s.structural})
	var errs field.ErrorList
	if status, ok := obj["status"]; ok && s.statusValidator != nil {
		var opts []apiservervalidation.ValidationOption
		if s.structural != nil {
			opts = append(opts, apiservervalidation.WithRatcheting(correlated.Key("status")))
		}
		errs = append(errs, apiservervalidation.ValidateCustomResourceUpdate(field.NewPath("status"), status, old["status"], s.statusValidator, opts...)...)
	}
	errs = append(errs, s.validateScaleStatus(obj)...)
	if s.features.listSets {
		if newErrs := structurallisttype.ValidateListSetsAndMaps(nil, s.structural, obj); len(newErrs) > 0 {
			if oldErrs := structurallisttype.ValidateListSetsAndMaps(nil, s.structural, old); len(oldErrs) == 0 {
				errs = append(errs, newErrs...)
			}
		}
	}
	return s.validateCEL(ctx, errs, obj, old, []cel.Option{cel.WithRatcheting(correlated)})
}

func (s *Schema) validateCEL(ctx context.Context, errs field.ErrorList, obj, old map[string]interface{}, opts []cel.Option) field.ErrorList {
	if s.cel == nil {
		return errs
	}
	if blocking := blockingError(errs); blocking != nil {
		return append(errs, blocking)
	}
	var oldObj interface{}
	if old != nil {
		oldObj = old
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, obj, oldObj, celconfig.RuntimeCELCostBudget, opts...)
	return append(errs, celErrs...)
}

// blockingError is upstream's hasBlockingErr: after a missing field, a
// wrong type, an unsupported enum value or a size limit the CEL rules
// would only add noise (or fail on the shape), so they are not run.
func blockingError(errs field.ErrorList) *field.Error {
	for _, err := range errs {
		switch err.Type {
		case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}

func (s *Schema) validateScaleSpec(obj map[string]interface{}) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	return validateReplicas(obj, s.scale.SpecReplicasPath)
}

func (s *Schema) validateScaleStatus(obj map[string]interface{}) field.ErrorList {
	if s.scale == nil {
		return nil
	}
	errs := validateReplicas(obj, s.scale.StatusReplicasPath)
	if s.scale.LabelSelectorPath != nil {
		path := strings.TrimPrefix(*s.scale.LabelSelectorPath, ".")
		selector, _, err := unstructured.NestedString(obj, strings.Split(path, ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*s.scale.LabelSelectorPath), selector, err.Error()))
		}
	}
	return errs
}

// validateReplicas is upstream's check of a scale replicas path (the field
// path is the JSON path as written, leading dot included, as upstream).
func validateReplicas(obj map[string]interface{}, jsonPath string) field.ErrorList {
	path := strings.TrimPrefix(jsonPath, ".")
	replicas, _, err := unstructured.NestedInt64(obj, strings.Split(path, ".")...)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, err.Error())}
	case replicas < 0:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, "should be a non-negative integer")}
	case replicas > math.MaxInt32:
		return field.ErrorList{field.Invalid(field.NewPath(jsonPath), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32))}
	}
	return nil
}

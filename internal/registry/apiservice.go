package registry

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration/validation"
)

// apiRegistrationGroup is the aggregation layer's group.
const apiRegistrationGroup = "apiregistration.k8s.io"

// apiServiceResource serves apiregistration.k8s.io/v1 APIServices with
// upstream's strategy (kube-aggregator pkg/registry/apiservice) and its
// validation, which is written against the internal types: objects are
// converted with the generated conversions, so messages and field paths
// are upstream's own.
func apiServiceResource(c clock) *Resource {
	gv := v1(apiRegistrationGroup)
	s := apiServiceStrategy{}
	return &Resource{
		GroupVersion: gv,
		Kind:         "APIService",
		Resource:     "apiservices",
		SingularName: "apiservice",
		Categories:   []string{"api-extensions"},
		Verbs:        allVerbs(),
		Subresources: []string{"status"},
		New:          func() runtime.Object { return &apiregistrationv1.APIService{} },
		NewList:      func() runtime.Object { return &apiregistrationv1.APIServiceList{} },
		Strategy:     s,
		Status:       s,
		// Upstream's ToSelectableFields: metadata only.
		SelectableFields: func(runtime.Object) fields.Set { return fields.Set{} },
		Table: table[*apiregistrationv1.APIService]{
			columns: []metav1.TableColumnDefinition{
				nameColumn(),
				col("Service", "string", "The reference to the service that hosts this API endpoint."),
				col("Available", "string", "Whether this service is available."),
				ageColumn(),
			},
			cells: func(a *apiregistrationv1.APIService) []interface{} {
				return []interface{}{a.Name, apiServiceCell(a), availableCell(a), c.since(a.CreationTimestamp)}
			},
		},
		StorageKeyPrefix: storagePrefix(gv, "apiservices"),
	}
}

// apiServiceCell is upstream's SERVICE column: "Local" or namespace/name.
func apiServiceCell(a *apiregistrationv1.APIService) string {
	if a.Spec.Service == nil {
		return "Local"
	}
	return a.Spec.Service.Namespace + "/" + a.Spec.Service.Name
}

// availableCell is upstream's AVAILABLE column: True, or the status with
// the reason in parentheses ("False (MissingEndpoints)").
func availableCell(a *apiregistrationv1.APIService) string {
	cond := helper.GetAPIServiceConditionByType(a, apiregistrationv1.Available)
	switch {
	case cond == nil:
		return string(apiregistrationv1.ConditionUnknown)
	case cond.Status == apiregistrationv1.ConditionTrue || cond.Reason == "":
		return string(cond.Status)
	default:
		return fmt.Sprintf("%s (%s)", cond.Status, cond.Reason)
	}
}

// apiServiceStrategy is upstream's apiServerStrategy and
// apiServerStatusStrategy. It does not use the generic behavior because
// upstream's validation validates metadata itself.
type apiServiceStrategy struct{}

var (
	_ Strategy       = apiServiceStrategy{}
	_ StatusStrategy = apiServiceStrategy{}
)

// defaultAPIService is apiregistration/v1's SetDefaults_ServiceReference.
func defaultAPIService(a *apiregistrationv1.APIService) {
	if a.Spec.Service != nil && a.Spec.Service.Port == nil {
		port := int32(443)
		a.Spec.Service.Port = &port
	}
}

func (apiServiceStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	a := obj.(*apiregistrationv1.APIService)
	defaultAPIService(a)
	a.Status = apiregistrationv1.APIServiceStatus{}
	// Local APIServices are available at once; there is nothing to check.
	if a.Spec.Service == nil {
		helper.SetAPIServiceCondition(a, helper.NewLocalAvailableAPIServiceCondition())
	}
}

func (apiServiceStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	a, o := obj.(*apiregistrationv1.APIService), old.(*apiregistrationv1.APIService)
	defaultAPIService(a)
	a.Status = o.Status
	a.Generation = o.Generation
}

func (apiServiceStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	in, err := toInternalAPIService(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIService(ctx, in)
}

func (apiServiceStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	in, err := toInternalAPIService(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	oldIn, err := toInternalAPIService(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIServiceUpdate(ctx, in, oldIn)
}

// PrepareForStatusUpdate keeps everything a status writer may not change,
// as upstream's apiServerStatusStrategy.
func (apiServiceStrategy) PrepareForStatusUpdate(_ context.Context, obj, old runtime.Object) {
	a, o := obj.(*apiregistrationv1.APIService), old.(*apiregistrationv1.APIService)
	a.Spec = o.Spec
	a.Labels = o.Labels
	a.Annotations = o.Annotations
	a.Finalizers = o.Finalizers
	a.OwnerReferences = o.OwnerReferences
	a.Generation = o.Generation
}

func (apiServiceStrategy) ValidateStatusUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	in, err := toInternalAPIService(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	oldIn, err := toInternalAPIService(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validation.ValidateAPIServiceStatusUpdate(ctx, in, oldIn)
}

// toInternalAPIService converts for upstream's validation with the
// generated conversion (a nil port, which defaulting prevents, converts
// to 0 and is reported as an invalid port).
func toInternalAPIService(obj runtime.Object) (*apiregistration.APIService, error) {
	out := &apiregistration.APIService{}
	if err := apiregistrationv1.Convert_v1_APIService_To_apiregistration_APIService(obj.(*apiregistrationv1.APIService), out, nil); err != nil {
		return nil, fmt.Errorf("converting APIService for validation: %w", err)
	}
	return out, nil
}

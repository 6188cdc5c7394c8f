package quota

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Resources whose usage is more than an object count.
var (
	Pods                   = schema.GroupResource{Resource: "pods"}
	Services               = schema.GroupResource{Resource: "services"}
	PersistentVolumeClaims = schema.GroupResource{Resource: "persistentvolumeclaims"}
)

// legacyCounts are the object counts quota knew before count/<resource>:
// each is charged with its count/ name.
var legacyCounts = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
}

// ignored are resources quota never charges: not stored (reviews,
// bindings) or not worth quota (events), as upstream's ignoredResources.
var ignored = map[schema.GroupResource]bool{
	{Resource: "bindings"}:                                                 true,
	{Resource: "componentstatuses"}:                                        true,
	{Resource: "events"}:                                                   true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
}

// CountedResource returns the resource whose objects the quota resource
// n counts: count/<resource>[.<group>], or one of the legacy names
// (secrets, configmaps, replicationcontrollers, resourcequotas).
func CountedResource(n corev1.ResourceName) (schema.GroupResource, bool) {
	for gr, legacy := range legacyCounts {
		if n == legacy {
			return gr, true
		}
	}
	s, ok := strings.CutPrefix(string(n), "count/")
	if !ok || s == "" {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(s, ".")
	return schema.GroupResource{Group: group, Resource: res}, true
}

// Ignored reports whether quota never charges gr.
func Ignored(gr schema.GroupResource) bool { return ignored[gr] }

// ObjectCountName is count/<resource>.<group> (count/<resource> for the
// core group): the object count quota of gr.
func ObjectCountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// storageClassSuffix qualifies a PVC resource by storage class:
// <class>.storageclass.storage.k8s.io/requests.storage.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

type kind uint8

const (
	countKind kind = iota
	podKind
	serviceKind
	pvcKind
)

// Evaluator computes one resource's quota usage, as upstream's
// quota.Evaluator for it. The zero value is not usable; see For.
type Evaluator struct {
	gr     schema.GroupResource
	kind   kind
	count  corev1.ResourceName
	legacy corev1.ResourceName // "" when gr has none
}

// For is gr's evaluator: pods, services and persistentvolumeclaims have
// their own usage; every other resource is an object count.
func For(gr schema.GroupResource) Evaluator {
	e := Evaluator{gr: gr, count: ObjectCountName(gr), legacy: legacyCounts[gr]}
	switch gr {
	case Pods:
		e.kind = podKind
	case Services:
		e.kind = serviceKind
	case PersistentVolumeClaims:
		e.kind = pvcKind
	}
	return e
}

// GroupResource is the resource e evaluates.
func (e Evaluator) GroupResource() schema.GroupResource { return e.gr }

// ChargesUpdates reports whether an update of the resource can change
// its usage and is charged the difference: services (a type change) and
// persistentvolumeclaims (an expansion). Pods' resources cannot change
// but through the resize subresource, which Myriad does not serve.
func (e Evaluator) ChargesUpdates() bool { return e.kind == serviceKind || e.kind == pvcKind }

var podResources = []corev1.ResourceName{
	"count/pods",
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
	corev1.ResourcePods,
}

var serviceResources = []corev1.ResourceName{
	"count/services", corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

var pvcResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

// MatchingResources returns those of names that e tracks.
func (e Evaluator) MatchingResources(names []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	switch e.kind {
	case podKind:
		out = Intersection(names, podResources)
		for _, n := range names {
			s := string(n)
			if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
				isExtendedResourceForQuota(n) {
				out = append(out, n)
			}
		}
	case serviceKind:
		out = Intersection(names, serviceResources)
	case pvcKind:
		for _, n := range names {
			if n == e.count || Contains(pvcResources, n) {
				out = append(out, n)
				continue
			}
			for _, r := range pvcResources {
				if strings.HasSuffix(string(n), storageClassSuffix+string(r)) {
					out = append(out, n)
					break
				}
			}
		}
	default:
		for _, n := range names {
			if n == e.count || (e.legacy != "" && n == e.legacy) {
				out = append(out, n)
			}
		}
	}
	return out
}

// isExtendedResourceForQuota: requests.<extended resource>, the only way
// quota names extended resources.
func isExtendedResourceForQuota(n corev1.ResourceName) bool {
	s, ok := strings.CutPrefix(string(n), corev1.DefaultResourceRequestsPrefix)
	return ok && isExtendedResourceName(s)
}

// isExtendedResourceName is upstream's helper: a qualified name outside
// the kubernetes.io domain, not itself a requests. quota name.
func isExtendedResourceName(s string) bool {
	if strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) || !strings.Contains(s, "/") {
		return false
	}
	domain := s[:strings.Index(s, "/")]
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// Matches reports whether q counts obj: q tracks at least one resource e
// tracks, and obj is in each of q's scopes. Only pods and claims
// (VolumeAttributesClass) have scopes; a scoped quota counts no other
// object.
func (e Evaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	if len(e.MatchingResources(Names(q.Status.Hard))) == 0 {
		return false, nil
	}
	return e.InScopes(q, obj)
}

// InScopes reports whether obj is in each of q's scopes (spec.scopes and
// spec.scopeSelector).
func (e Evaluator) InScopes(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	for _, sel := range ScopeSelectors(q) {
		var in bool
		var err error
		switch e.kind {
		case podKind:
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return false, fmt.Errorf("quota: %T is not a pod", obj)
			}
			in, err = podInScope(sel, pod)
		case pvcKind:
			pvc, ok := obj.(*corev1.PersistentVolumeClaim)
			if !ok {
				return false, fmt.Errorf("quota: %T is not a persistentvolumeclaim", obj)
			}
			in, err = pvcInScope(sel, pvc)
		}
		if err != nil || !in {
			return false, err
		}
	}
	return true, nil
}

// pvcInScope: claims have one scope, VolumeAttributesClass, selecting on
// any of the classes a claim names (asked for, current, or being
// modified to).
func pvcInScope(sel corev1.ScopedResourceSelectorRequirement, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	var classes []string
	for _, c := range []*string{pvc.Spec.VolumeAttributesClassName, pvc.Status.CurrentVolumeAttributesClassName} {
		if c != nil && *c != "" {
			classes = append(classes, *c)
		}
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		classes = append(classes, m.TargetVolumeAttributesClassName)
	}
	if sel.Operator == corev1.ScopeSelectorOpExists {
		return len(classes) > 0, nil
	}
	s, err := scopeSelector(sel)
	if err != nil {
		return false, err
	}
	if len(classes) == 0 {
		return s.Matches(labels.Set{}), nil
	}
	for _, c := range classes {
		if s.Matches(labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): c}) {
			return true, nil
		}
	}
	return false, nil
}

// ScopeSelectors returns q's scopes as selector requirements: each of
// spec.scopes as Exists, then spec.scopeSelector's.
func ScopeSelectors(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// Usage is what obj uses of every resource e tracks, as of now (a pod
// past its deletion grace period uses nothing).
func (e Evaluator) Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	switch e.kind {
	case podKind:
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("quota: %T is not a pod", obj)
		}
		return podUsage(pod, now), nil
	case serviceKind:
		svc, ok := obj.(*corev1.Service)
		if !ok {
			return nil, fmt.Errorf("quota: %T is not a service", obj)
		}
		return serviceUsage(svc), nil
	case pvcKind:
		pvc, ok := obj.(*corev1.PersistentVolumeClaim)
		if !ok {
			return nil, fmt.Errorf("quota: %T is not a persistentvolumeclaim", obj)
		}
		return pvcUsage(pvc), nil
	}
	out := corev1.ResourceList{e.count: one()}
	if e.legacy != "" {
		out[e.legacy] = one()
	}
	return out, nil
}

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

func serviceUsage(svc *corev1.Service) corev1.ResourceList {
	out := corev1.ResourceList{
		"count/services":                     one(),
		corev1.ResourceServices:              one(),
		corev1.ResourceServicesLoadBalancers: {Format: resource.DecimalSI},
		corev1.ResourceServicesNodePorts:     {Format: resource.DecimalSI},
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			// Only the ports given a node port explicitly take one.
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one()
	}
	return out
}

func pvcUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims: one(),
		"count/persistentvolumeclaims":        one(),
	}
	class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
	}
	// The larger of what is asked and what is allocated: a failed
	// expansion recovered to a smaller request still holds the larger
	// volume (upstream's RecoverVolumeExpansionFailure, on in v1.34).
	storage, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if alloc, aok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; aok && (!ok || alloc.Cmp(storage) > 0) {
		storage, ok = alloc, true
	}
	if ok {
		out[corev1.ResourceRequestsStorage] = storage.DeepCopy()
		if class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
		}
	}
	return out
}

package quota

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/myriad-k8s/myriad/internal/registry"
)

// PodCounts reports whether pod counts against quota at now: not once it
// is terminal, nor once it is past its deletion grace period (a pod stuck
// terminating on a lost node must not block its replacement).
func PodCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		if now.After(pod.DeletionTimestamp.Add(grace)) {
			return false
		}
	}
	return true
}

// podResourcesOptions: the allocated resources of a resized pod count
// when larger than its spec (InPlacePodVerticalScaling), pod-level
// resources override the containers' (PodLevelResources), both on in
// v1.34.
var podResourcesOptions = resourcehelper.PodResourcesOptions{UseStatusResources: true}

// podUsage: count/pods counts every stored pod; pods and the compute
// resources only those not at the end of their life.
func podUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	if !PodCounts(pod, now) {
		return corev1.ResourceList{"count/pods": one()}
	}
	out := computeUsage(resourcehelper.PodRequests(pod, podResourcesOptions), resourcehelper.PodLimits(pod, podResourcesOptions))
	out["count/pods"] = one()
	return out
}

// computeUsage turns requests and limits into quota names: cpu is both
// cpu and requests.cpu, hugepages-* both itself and requests.hugepages-*,
// an extended resource requests.<name> only.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one()}
	for _, r := range []struct{ plain, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.plain]; ok {
			out[r.plain] = q.DeepCopy()
			out[r.req] = q.DeepCopy()
		}
		if q, ok := limits[r.plain]; ok {
			out[r.lim] = q.DeepCopy()
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name] = q.DeepCopy()
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		case isExtendedResourceName(string(name)):
			out[corev1.DefaultResourceRequestsPrefix+name] = q.DeepCopy()
		}
	}
	return out
}

// podInScope reports whether pod is in the scope sel names.
func podInScope(sel corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) (bool, error) {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return isTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !isTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return isBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !isBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		s, err := scopeSelector(sel)
		if err != nil {
			return false, err
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return s.Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return usesCrossNamespacePodAffinity(pod), nil
	}
	return false, nil
}

// isTerminating: the pod has an active deadline, so it ends by itself.
func isTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

func isBestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	return registry.PodQOS(&pod.Spec) == corev1.PodQOSBestEffort
}

// scopeSelector is upstream's ScopedResourceSelectorRequirementsAsSelector
// for one requirement: the scope name as a label key.
func scopeSelector(sel corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, fmt.Errorf("failed to parse and convert selector: %q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return nil, fmt.Errorf("failed to parse and convert selector: %w", err)
	}
	return labels.NewSelector().Add(*r), nil
}

// usesCrossNamespacePodAffinity: a pod (anti-)affinity term names other
// namespaces or selects them.
func usesCrossNamespacePodAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	var weighted []corev1.WeightedPodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		weighted = append(weighted, pa.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		weighted = append(weighted, pa.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	for i := range weighted {
		terms = append(terms, &weighted[i].PodAffinityTerm)
	}
	for _, t := range terms {
		if cross(t) {
			return true
		}
	}
	return false
}

// constrained are the resources a quota on which makes every container
// declare them: a backward-compatibility rule of upstream's (quota on cpu
// or memory predates QoS), not extended to newer resources.
var constrained = []corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
}

// Constraints checks that obj declares every resource of required that
// must be declared: for a pod, each container and init container must
// request or limit the cpu and memory quotas track. The error reads as
// upstream's: "must specify limits.cpu for: a,b; requests.memory for: a".
func (e Evaluator) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	if e.kind != podKind {
		return nil
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("quota: %T is not a pod", obj)
	}
	need := Intersection(required, constrained)
	if len(need) == 0 {
		return nil
	}
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		has := computeUsage(c.Resources.Requests, c.Resources.Limits)
		for _, n := range need {
			if _, ok := has[n]; !ok {
				missing[n] = append(missing[n], c.Name)
			}
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, string(n))
	}
	sort.Strings(names)
	msgs := make([]string, len(names))
	for i, n := range names {
		cs := missing[corev1.ResourceName(n)]
		sort.Strings(cs)
		msgs[i] = n + " for: " + strings.Join(cs, ",")
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

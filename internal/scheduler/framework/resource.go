package framework

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Upstream's defaults for scoring pods that request nothing, so that
// best-effort pods still spread (pkg/scheduler/util.DefaultMilliCPURequest).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of each schedulable resource.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is the pod count: allocatable pods on a node, 1 per pod.
	AllowedPodNumber int64
	// Scalar holds extended resources and hugepages; nil when none.
	Scalar map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case v1.ResourceMemory:
			r.Memory = q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber = q.Value()
		default:
			if isScalar(name) {
				if r.Scalar == nil {
					r.Scalar = map[v1.ResourceName]int64{}
				}
				r.Scalar[name] = q.Value()
			}
		}
	}
	return r
}

// isScalar reports whether name is an extended resource, a hugepage size or
// an attachable-volume count: the ones NodeResourcesFit checks beyond
// cpu/memory/ephemeral-storage.
func isScalar(name v1.ResourceName) bool {
	s := string(name)
	if len(s) > len("hugepages-") && s[:len("hugepages-")] == "hugepages-" {
		return true
	}
	if len(s) > len("attachable-volumes-") && s[:len("attachable-volumes-")] == "attachable-volumes-" {
		return true
	}
	// Extended resources are fully qualified and outside kubernetes.io.
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			domain := s[:i]
			return domain != "kubernetes.io" && !hasSuffix(domain, ".kubernetes.io")
		}
	}
	return false
}

func hasSuffix(s, suffix string) bool {
	return len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix
}

// Add adds o to r.
func (r *Resource) Add(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] += v
	}
}

// Sub subtracts o from r.
func (r *Resource) Sub(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = map[v1.ResourceName]int64{}
		}
		r.Scalar[k] -= v
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	if r.Scalar != nil {
		s := make(map[v1.ResourceName]int64, len(r.Scalar))
		for k, v := range r.Scalar {
			s[k] = v
		}
		r.Scalar = s
	}
	return r
}

// PodRequests computes what pod requests as upstream's NodeResourcesFit
// does: the larger of the sum of app containers (plus restartable init
// containers) and the largest init container, plus overhead, honouring
// pod-level resources (component-helpers' PodRequests). AllowedPodNumber is
// 1.
func PodRequests(pod *v1.Pod) Resource {
	r := NewResource(resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}))
	r.AllowedPodNumber = 1
	return r
}

// nonZeroRequests is what scoring counts for the pod: unset cpu or memory
// requests count as upstream's defaults.
func nonZeroRequests(pod *v1.Pod) (milliCPU, memory int64) {
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: v1.ResourceList{
			v1.ResourceCPU:    *resourceQuantityMilli(DefaultMilliCPURequest),
			v1.ResourceMemory: *resourceQuantity(DefaultMemoryRequest),
		},
	})
	return rl.Cpu().MilliValue(), rl.Memory().Value()
}

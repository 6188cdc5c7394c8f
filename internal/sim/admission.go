package sim

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// usage is what admitted pods take from a node.
type usage struct {
	milliCPU, memory int64
	pods             int64
}

func (u usage) add(o usage) usage {
	return usage{u.milliCPU + o.milliCPU, u.memory + o.memory, u.pods + o.pods}
}

func (u usage) sub(o usage) usage {
	return usage{u.milliCPU - o.milliCPU, u.memory - o.memory, u.pods - o.pods}
}

// podUsage is a pod's requests as the kubelet's admission counts them
// (containers, init containers and overhead; no defaults for pods that
// request nothing).
func podUsage(pod *corev1.Pod) usage {
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return usage{milliCPU: req.Cpu().MilliValue(), memory: req.Memory().Value(), pods: 1}
}

// admit decides whether a pod needing want fits next to used on a node with
// allocatable alloc. It returns "" when it fits, or the reason and message
// the kubelet gives (OutOfpods, OutOfcpu, OutOfmemory, checked in that
// order, the first that fails reported), e.g. "Node didn't have enough
// resource: cpu, requested: 2000, used: 31000, capacity: 32000".
func admit(want, used, alloc usage) (reason, message string) {
	check := []struct {
		name                 string
		req, inUse, capacity int64
	}{
		{"pods", want.pods, used.pods, alloc.pods},
		{"cpu", want.milliCPU, used.milliCPU, alloc.milliCPU},
		{"memory", want.memory, used.memory, alloc.memory},
	}
	for _, c := range check {
		if c.req > 0 && c.inUse+c.req > c.capacity {
			return "OutOf" + c.name, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				c.name, c.req, c.inUse, c.capacity)
		}
	}
	return "", ""
}

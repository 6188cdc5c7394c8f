package core

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// classKey is the scheduling-relevant part of a pod. Pods with equal keys
// fit and score identically on every node, so they share one search.
type classKey struct {
	Namespace        string                        `json:"ns"`
	Labels           map[string]string             `json:"l,omitempty"`
	SchedulerName    string                        `json:"s,omitempty"`
	Priority         *int32                        `json:"p,omitempty"`
	PreemptionPolicy *v1.PreemptionPolicy          `json:"pp,omitempty"`
	NodeName         string                        `json:"n,omitempty"`
	NodeSelector     map[string]string             `json:"ns2,omitempty"`
	Affinity         *v1.Affinity                  `json:"a,omitempty"`
	Tolerations      []v1.Toleration               `json:"t,omitempty"`
	Overhead         v1.ResourceList               `json:"o,omitempty"`
	Resources        *v1.ResourceRequirements      `json:"r,omitempty"`
	Containers       []containerKey                `json:"c"`
	InitContainers   []containerKey                `json:"i,omitempty"`
	Spread           []v1.TopologySpreadConstraint `json:"ts,omitempty"`
}

type containerKey struct {
	Requests      v1.ResourceList            `json:"r,omitempty"`
	Ports         []v1.ContainerPort         `json:"p,omitempty"`
	RestartPolicy *v1.ContainerRestartPolicy `json:"rp,omitempty"`
}

// EquivalenceClass returns pod's class key, or "" when the pod should not be
// batched: pods with pod (anti-)affinity or topology spread constraints,
// whose fit depends on where their siblings land, and pods with claims,
// whose fit depends on their own claims.
func EquivalenceClass(pod *v1.Pod) string {
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return ""
		}
	}
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return ""
	}
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return ""
	}
	k := classKey{
		Namespace: pod.Namespace, Labels: pod.Labels, SchedulerName: pod.Spec.SchedulerName,
		Priority: pod.Spec.Priority, PreemptionPolicy: pod.Spec.PreemptionPolicy, NodeName: pod.Spec.NodeName,
		NodeSelector: pod.Spec.NodeSelector, Affinity: pod.Spec.Affinity, Tolerations: pod.Spec.Tolerations,
		Overhead: pod.Spec.Overhead, Resources: pod.Spec.Resources,
	}
	k.Containers = make([]containerKey, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		k.Containers[i] = containerKey{Requests: c.Resources.Requests, Ports: c.Ports}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		k.InitContainers = append(k.InitContainers, containerKey{Requests: c.Resources.Requests, Ports: c.Ports, RestartPolicy: c.RestartPolicy})
	}
	b, err := json.Marshal(&k)
	if err != nil {
		return ""
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}

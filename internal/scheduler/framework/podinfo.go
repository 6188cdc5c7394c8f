package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

func resourceQuantity(v int64) *resource.Quantity {
	return resource.NewQuantity(v, resource.BinarySI)
}

func resourceQuantityMilli(v int64) *resource.Quantity {
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

// AffinityTerm is a parsed pod (anti-)affinity term.
type AffinityTerm struct {
	// Namespaces the term's pods may be in; empty with AllNamespaces false
	// means the owning pod's namespace.
	Namespaces    sets.Set[string]
	AllNamespaces bool
	Selector      labels.Selector
	TopologyKey   string
}

// Matches reports whether pod (whose labels are given) is selected by the
// term.
func (t *AffinityTerm) Matches(pod *v1.Pod) bool {
	if !t.AllNamespaces && !t.Namespaces.Has(pod.Namespace) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with the facts the plugins need, computed once.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is what NodeResourcesFit checks; AllowedPodNumber is 1.
	Requests Resource
	// NonZeroMilliCPU and NonZeroMemory are what scoring counts.
	NonZeroMilliCPU, NonZeroMemory int64
	Priority                       int32
	// HostPorts are the containers' ports with a hostPort.
	HostPorts []v1.ContainerPort

	RequiredAffinity      []AffinityTerm
	RequiredAntiAffinity  []AffinityTerm
	PreferredAffinity     []WeightedAffinityTerm
	PreferredAntiAffinity []WeightedAffinityTerm
	// ParseError is set when a term's selector is invalid; the pod is then
	// unschedulable, as upstream's PreFilter fails.
	ParseError error
	// HasClaims: the pod mounts a PersistentVolumeClaim (directly or as a
	// generic ephemeral volume), so VolumeBinding has work to do; pods
	// without claims skip it entirely.
	HasClaims bool
}

// NewPodInfo computes pod's scheduling facts.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod)}
	pi.NonZeroMilliCPU, pi.NonZeroMemory = nonZeroRequests(pod)
	if pod.Spec.Priority != nil {
		pi.Priority = *pod.Spec.Priority
	}
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				pi.HostPorts = append(pi.HostPorts, p)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		// Restartable (sidecar) init containers keep their ports, as upstream.
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			for _, p := range c.Ports {
				if p.HostPort > 0 {
					pi.HostPorts = append(pi.HostPorts, p)
				}
			}
		}
	}
	for i := range pod.Spec.Volumes {
		if v := &pod.Spec.Volumes[i]; v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			pi.HasClaims = true
			break
		}
	}
	if a := pod.Spec.Affinity; a != nil {
		if pa := a.PodAffinity; pa != nil {
			pi.RequiredAffinity = pi.parseTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAffinity = pi.parseWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			pi.RequiredAntiAffinity = pi.parseTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution)
			pi.PreferredAntiAffinity = pi.parseWeighted(pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	return pi
}

// Key is namespace/name.
func (pi *PodInfo) Key() string { return pi.Pod.Namespace + "/" + pi.Pod.Name }

// HasAffinity reports whether the pod has any pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinity)+len(pi.RequiredAntiAffinity)+len(pi.PreferredAffinity)+len(pi.PreferredAntiAffinity) > 0
}

func (pi *PodInfo) parseTerms(terms []v1.PodAffinityTerm) []AffinityTerm {
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pi.Pod, &terms[i])
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, t)
	}
	return out
}

func (pi *PodInfo) parseWeighted(terms []v1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pi.Pod, &terms[i].PodAffinityTerm)
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out
}

// newAffinityTerm parses a term. A namespaceSelector of {} selects every
// namespace; a non-empty namespaceSelector would need namespace labels,
// which the scheduler does not track, so only the listed namespaces count
// for such a term (a documented gap).
func newAffinityTerm(pod *v1.Pod, t *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("pod %s/%s affinity term: %w", pod.Namespace, pod.Name, err)
	}
	if t.LabelSelector == nil {
		sel = labels.Nothing()
	}
	// matchLabelKeys / mismatchLabelKeys merge the pod's own label values in.
	for _, k := range t.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "=", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			r, err := labels.NewRequirement(k, "!=", []string{v})
			if err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	at := AffinityTerm{Selector: sel, TopologyKey: t.TopologyKey, Namespaces: sets.New(t.Namespaces...)}
	if ns := t.NamespaceSelector; ns != nil && len(ns.MatchLabels) == 0 && len(ns.MatchExpressions) == 0 {
		at.AllNamespaces = true
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		at.Namespaces = sets.New(pod.Namespace)
	}
	return at, nil
}

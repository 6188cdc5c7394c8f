package endpointutil

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// Selects reports whether the Service selects pods (a Service without a
// selector has its endpoints managed by someone else).
func Selects(svc *corev1.Service) bool {
	return len(svc.Spec.Selector) > 0 && svc.Spec.Type != corev1.ServiceTypeExternalName
}

// Pods lists the pods a Service selects that may be endpoints: they have
// an IP and have not finished.
func Pods(pods corelisters.PodLister, svc *corev1.Service) ([]*corev1.Pod, error) {
	all, err := pods.Pods(svc.Namespace).List(labels.SelectorFromValidatedSet(svc.Spec.Selector))
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, p := range all {
		if p.Status.PodIP == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Ready is the pod's Ready condition.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Port resolves a Service port's targetPort on a pod: a number as is
// (the port itself when unset), a name through the pod's container ports.
func Port(p *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	switch {
	case tp.Type == intstr.Int && tp.IntVal == 0:
		return sp.Port, true
	case tp.Type == intstr.Int:
		return tp.IntVal, true
	case tp.StrVal == "":
		return sp.Port, true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal && protocol(cp.Protocol) == protocol(sp.Protocol) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

func protocol(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

// IsIPv6 reports whether ip is an IPv6 address.
func IsIPv6(ip string) bool { return strings.Contains(ip, ":") }

// ServiceKeysForPod returns the keys of the Services in the pod's
// namespace whose selectors match the pod's labels (or old's, so a pod
// leaving a Service updates it too).
func ServiceKeysForPod(services corelisters.ServiceLister, pod, old *corev1.Pod) []string {
	svcs, err := services.Services(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var keys []string
	for _, s := range svcs {
		if !Selects(s) {
			continue
		}
		sel := labels.SelectorFromValidatedSet(s.Spec.Selector)
		if sel.Matches(labels.Set(pod.Labels)) || (old != nil && sel.Matches(labels.Set(old.Labels))) {
			keys = append(keys, s.Namespace+"/"+s.Name)
		}
	}
	return keys
}

// PodHandler enqueues the Services of changed pods. Pod updates that
// change nothing endpoints depend on (most status writes) are dropped.
func PodHandler(services corelisters.ServiceLister, add func(key string)) cache.ResourceEventHandler {
	enqueue := func(p, old *corev1.Pod) {
		for _, k := range ServiceKeysForPod(services, p, old) {
			add(k)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				enqueue(p, nil)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			p, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || !relevantChange(o, p) {
				return
			}
			enqueue(p, o)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				enqueue(p, nil)
			}
		},
	}
}

func relevantChange(o, p *corev1.Pod) bool {
	return o.Status.PodIP != p.Status.PodIP || Ready(o) != Ready(p) || o.Status.Phase != p.Status.Phase ||
		(o.DeletionTimestamp == nil) != (p.DeletionTimestamp == nil) || o.Spec.NodeName != p.Spec.NodeName ||
		!labels.Equals(o.Labels, p.Labels) || o.Spec.Hostname != p.Spec.Hostname
}

// ServiceHandler enqueues changed Services.
func ServiceHandler(add func(key string)) cache.ResourceEventHandler {
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}
}

package aggregator

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The informers over every Service and EndpointSlice keep only what
// resolving and checking a Service reads: the watch cache hands out
// decoded copies it does not keep, so whole objects (managedFields,
// annotations, topology hints) would be the aggregator's own memory, for
// every Service in a cluster of thousands. Objects are copied, never
// modified: watch events are shared with every other watcher.

func serviceTransform(obj any) (any, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return obj, nil // a tombstone
	}
	return &corev1.Service{
		ObjectMeta: slimMeta(&svc.ObjectMeta),
		Spec:       corev1.ServiceSpec{Type: svc.Spec.Type, Ports: svc.Spec.Ports, IPFamilies: svc.Spec.IPFamilies},
	}, nil
}

func endpointSliceTransform(obj any) (any, error) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return obj, nil
	}
	out := &discoveryv1.EndpointSlice{ObjectMeta: slimMeta(&s.ObjectMeta), AddressType: s.AddressType, Ports: s.Ports,
		Endpoints: make([]discoveryv1.Endpoint, len(s.Endpoints))}
	for i, e := range s.Endpoints {
		out.Endpoints[i] = discoveryv1.Endpoint{Addresses: e.Addresses, Conditions: e.Conditions}
	}
	return out, nil
}

// slimMeta keeps the identity and the labels (an EndpointSlice's Service
// is its kubernetes.io/service-name label).
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion, Labels: m.Labels}
}

var (
	_ toolscache.TransformFunc = serviceTransform
	_ toolscache.TransformFunc = endpointSliceTransform
)

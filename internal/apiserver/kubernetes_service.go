package apiserver

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubernetesServiceName is the Service in "default" every in-cluster
// client finds the API through (KUBERNETES_SERVICE_HOST), with the first
// address of the service range.
const kubernetesServiceName = "kubernetes"

// bootstrapKubernetesService creates the kubernetes Service if missing and
// points its Endpoints and EndpointSlice at this server, as upstream's
// bootstrap controller does. Without a public address it does nothing; on
// a loopback one it creates only the Service.
func (s *Server) bootstrapKubernetesService(ctx context.Context) error {
	addr, port := s.cfg.PublicAddress, s.cfg.PublicPort
	if !addr.IsValid() || port == 0 {
		return nil
	}
	svcs, eps, slices := s.handlers[corev1.SchemeGroupVersion.WithResource("services")],
		s.handlers[corev1.SchemeGroupVersion.WithResource("endpoints")],
		s.handlers[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	if svcs == nil || eps == nil || slices == nil {
		return nil
	}
	meta := metav1.ObjectMeta{Name: kubernetesServiceName, Namespace: metav1.NamespaceDefault,
		Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}}
	svc := &corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{
		Type:            corev1.ServiceTypeClusterIP,
		ClusterIP:       s.services.FirstAddress().String(),
		SessionAffinity: corev1.ServiceAffinityNone,
		Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443,
			TargetPort: intstr.FromInt32(port)}},
	}}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	opts := writeOptions{fieldManager: "myriad-apiserver"}
	_, _, err := svcs.objects.get(ctx, metav1.NamespaceDefault, kubernetesServiceName)
	if apierrors.IsNotFound(err) {
		_, err = svcs.createObject(ctx, svc, metav1.NamespaceDefault, opts)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		// A data directory from before this Service existed may have given
		// its address to another Service; serving matters more.
		s.log.Warn("cannot create the kubernetes service", "err", err)
		return nil
	}

	if addr.IsLoopback() {
		// Endpoints may not name loopback addresses (upstream refuses them
		// too); a server on loopback has no in-cluster clients to point.
		return nil
	}
	return s.startEndpointLeases(ctx, meta)
}

// reconcileKubernetesEndpoints points the kubernetes Service's Endpoints
// and EndpointSlice at addrs (every live API server, endpointleases.go),
// all serving on this server's port, as upstream's lease reconciler
// assumes.
func (s *Server) reconcileKubernetesEndpoints(ctx context.Context, meta metav1.ObjectMeta, addrs []netip.Addr) error {
	eps, slices := s.handlers[corev1.SchemeGroupVersion.WithResource("endpoints")],
		s.handlers[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	port := s.cfg.PublicPort
	var epAddrs []corev1.EndpointAddress
	var sliceEndpoints []discoveryv1.Endpoint
	ready := true
	for _, a := range addrs {
		epAddrs = append(epAddrs, corev1.EndpointAddress{IP: a.String()})
		sliceEndpoints = append(sliceEndpoints, discoveryv1.Endpoint{Addresses: []string{a.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	name, p, proto := "https", port, corev1.ProtocolTCP
	endpoints := &corev1.Endpoints{ObjectMeta: *meta.DeepCopy(), Subsets: []corev1.EndpointSubset{{
		Addresses: epAddrs,
		Ports:     []corev1.EndpointPort{{Name: name, Port: p, Protocol: proto}},
	}}}
	endpoints.Labels = map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}
	endpoints.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	if err := reconcileSystemObject(ctx, eps, endpoints, func(cur, want runtime.Object) bool {
		return apiequality.Semantic.DeepEqual(cur.(*corev1.Endpoints).Subsets, want.(*corev1.Endpoints).Subsets)
	}, func(cur, want runtime.Object) { cur.(*corev1.Endpoints).Subsets = want.(*corev1.Endpoints).Subsets }); err != nil {
		return err
	}

	addressType := discoveryv1.AddressTypeIPv4
	if s.cfg.PublicAddress.Is6() {
		addressType = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: *meta.DeepCopy(), AddressType: addressType,
		Endpoints: sliceEndpoints,
		Ports:     []discoveryv1.EndpointPort{{Name: &name, Port: &p, Protocol: &proto}},
	}
	slice.Labels = map[string]string{discoveryv1.LabelServiceName: kubernetesServiceName}
	slice.SetGroupVersionKind(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"))
	return reconcileSystemObject(ctx, slices, slice, func(cur, want runtime.Object) bool {
		c, w := cur.(*discoveryv1.EndpointSlice), want.(*discoveryv1.EndpointSlice)
		return c.AddressType == w.AddressType && apiequality.Semantic.DeepEqual(c.Endpoints, w.Endpoints) && apiequality.Semantic.DeepEqual(c.Ports, w.Ports)
	}, func(cur, want runtime.Object) {
		c, w := cur.(*discoveryv1.EndpointSlice), want.(*discoveryv1.EndpointSlice)
		c.Endpoints, c.Ports = w.Endpoints, w.Ports
	})
}

// reconcileSystemObject creates want, or updates the stored object with
// copyInto when same says it differs (the port changes between runs).
func reconcileSystemObject(ctx context.Context, h *resourceHandler, want runtime.Object, same func(cur, want runtime.Object) bool, copyInto func(cur, want runtime.Object)) error {
	m, err := meta.Accessor(want)
	if err != nil {
		return err
	}
	ns, name := m.GetNamespace(), m.GetName()
	_, err = h.createObject(ctx, want, ns, writeOptions{fieldManager: "myriad-apiserver"})
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur, _, err := h.objects.get(ctx, ns, name)
	if err != nil || same(cur, want) {
		return err
	}
	_, err = h.systemUpdate(ctx, ns, name, func(cur runtime.Object) (runtime.Object, error) {
		copyInto(cur, want)
		return cur, nil
	})
	if err != nil {
		return fmt.Errorf("updating %s %s: %w", h.objects.gr, m.GetName(), err)
	}
	return nil
}

package apiserver

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// resolveService is where a conversion webhook's service reference is
// reached: a ready endpoint of the Service's port. The control plane runs
// no kube-proxy, so the cluster IP would lead nowhere.
func (s *Server) resolveService(ctx context.Context, namespace, name string, port int32) (string, error) {
	obj, err := s.GetObject(ctx, corev1.SchemeGroupVersion.WithResource("services"), namespace, name, "0")
	if err != nil {
		return "", fmt.Errorf("service %s/%s: %w", namespace, name, err)
	}
	svc := obj.(*corev1.Service)
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return "", fmt.Errorf("service %s/%s has no port %d", namespace, name, port)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	}
	obj, err = s.GetObject(ctx, corev1.SchemeGroupVersion.WithResource("endpoints"), namespace, name, "0")
	if err != nil {
		return "", fmt.Errorf("endpoints of service %s/%s: %w", namespace, name, err)
	}
	for _, subset := range obj.(*corev1.Endpoints).Subsets {
		for _, ep := range subset.Ports {
			if ep.Name != sp.Name && len(subset.Ports) > 1 {
				continue
			}
			if sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0 && sp.Name == "" && ep.Port != sp.TargetPort.IntVal {
				continue
			}
			if len(subset.Addresses) > 0 {
				return net.JoinHostPort(subset.Addresses[0].IP, strconv.Itoa(int(ep.Port))), nil
			}
		}
	}
	return "", fmt.Errorf("service %s/%s has no ready endpoint for port %d", namespace, name, port)
}

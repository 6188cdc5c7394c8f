package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/myriad-k8s/myriad/internal/admission/podsecurity"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// podSecurity builds the PodSecurity admission plugin over the namespaces
// and pods caches: a pod create reads its namespace's labels from the
// cache as NamespaceLifecycle does (the same read, usually a hit), and the
// pods of a namespace whose enforce label is tightened are listed from
// the cache as it stands. Nil when pods are not served.
func (s *Server) podSecurity() (*podsecurity.Plugin, error) {
	pods, ok := s.handlers[podsGVR]
	if !ok || s.namespaces == nil {
		return nil, nil
	}
	return podsecurity.New(podsecurity.Config{
		Configuration: s.cfg.PodSecurity,
		Namespace: func(ctx context.Context, name string) (*corev1.Namespace, error) {
			obj, err := s.namespaceForAdmission(ctx, name)
			if err != nil {
				return nil, err
			}
			return obj.(*corev1.Namespace), nil
		},
		Pods: func(ctx context.Context, ns string) ([]*corev1.Pod, error) {
			return cachedList[*corev1.Pod](ctx, pods, ns)
		},
		Metrics: s.metrics,
	})
}

package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// systemNamespaces exist in every cluster; clients (kubectl's default
// namespace, kubelets' node leases) assume them, so the server creates
// them at start as upstream's bootstrap controller does.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// bootstrap creates what must exist before clients arrive. It is
// idempotent: what exists is left alone.
func (s *Server) bootstrap(ctx context.Context) error {
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		_, err := s.namespaces.createObject(ctx, ns, "", writeOptions{fieldManager: "myriad-apiserver"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	if err := s.bootstrapPriorityClasses(ctx); err != nil {
		return err
	}
	return s.bootstrapKubernetesService(ctx)
}

package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// Bootstrap is not admission: it is the server writing what every cluster
// has (upstream's bootstrap controllers). It stays in this package because
// it writes through the server's own create path, admission and
// allocation included, as upstream's write through a loopback client: a
// package of its own would need that client (credentials and a network
// hop at start) or an exported write API only it would use.

// systemNamespaces exist in every cluster; clients (kubectl's default
// namespace, kubelets' node leases) assume them, so the server creates
// them at start as upstream's bootstrap controller does.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// systemPriorityClassDescriptions are upstream's descriptions of the
// classes its bootstrap creates (values in registry.SystemPriorityClasses).
var systemPriorityClassDescriptions = map[string]string{
	"system-node-critical":    "Used for system critical pods that must not be moved from their current node.",
	"system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
}

// bootstrapUser is who the server's own writes are admitted as: upstream's
// loopback identity, a superuser.
var bootstrapUser = &request.User{Name: "system:apiserver", Groups: []string{request.GroupMasters, request.GroupAuthenticated}}

// bootstrap creates what must exist before clients arrive. It is
// idempotent: what exists is left alone.
// bootstrapWhenReady runs bootstrap until it is not refused for a cache
// still filling. Bootstrap reads through the caches, whose reads wait a
// bounded time (then answer 429) so that clients are not held; on a
// loaded machine with a big store a cache can take longer than that
// (seen at 50,000 pods under another process's load: the server exited),
// and bootstrap is idempotent, so it tries again.
func (s *Server) bootstrapWhenReady(ctx context.Context) error {
	for {
		err := s.bootstrap(ctx)
		if err == nil || !apierrors.IsTooManyRequests(err) {
			return err
		}
		s.log.Info("bootstrap waits for the caches to fill", "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("bootstrap: %w (last: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Server) bootstrap(ctx context.Context) error {
	ctx = request.WithUser(ctx, bootstrapUser)
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
	if err := s.bootstrapRBAC(ctx); err != nil {
		return err
	}
	if err := s.bootstrapKubeletClient(ctx); err != nil {
		return err
	}
	return s.bootstrapKubernetesService(ctx)
}

// bootstrapPriorityClasses creates the system classes if missing.
func (s *Server) bootstrapPriorityClasses(ctx context.Context) error {
	pcs, ok := s.handlers[priorityClassesGVR]
	if !ok {
		return nil
	}
	for name, value := range registry.SystemPriorityClasses() {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Description: systemPriorityClassDescriptions[name]}
		pc.SetGroupVersionKind(schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"))
		_, err := pcs.createObject(ctx, pc, "", writeOptions{fieldManager: "myriad-apiserver"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}

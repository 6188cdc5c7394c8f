package apiserver

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/rbac/bootstrappolicy"
)

// bootstrapRBAC reconciles the default RBAC policy (package
// bootstrappolicy) through the server's own write path, as upstream's
// storage_rbac post-start hook does through its loopback client. It runs
// in Start, so the server is not ready before the policy is in place.
func (s *Server) bootstrapRBAC(ctx context.Context) error {
	if _, ok := s.handlers[rbacClusterRolesGVR]; !ok {
		return nil // a server built without the RBAC API (some tests)
	}
	start := time.Now()
	res, err := bootstrappolicy.Reconcile(request.WithUser(ctx, bootstrapUser), serverObjects{s}, s.log)
	if err != nil {
		return fmt.Errorf("reconciling the default RBAC policy: %w", err)
	}
	s.log.Info("default RBAC policy reconciled", "created", res.Created, "updated", res.Updated, "recreated", res.Recreated,
		"protected", res.Protected, "unchanged", res.Unchanged, "duration", time.Since(start))
	return nil
}

var rbacClusterRolesGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}

// serverObjects is bootstrappolicy.Objects over the resource handlers:
// reads from the store, writes through create/update/delete with
// admission, as the bootstrap user (Reconcile's context carries it).
type serverObjects struct{ s *Server }

var _ bootstrappolicy.Objects = serverObjects{}

func (o serverObjects) handler(gvr schema.GroupVersionResource) (*resourceHandler, error) {
	h, ok := o.s.handlers[gvr]
	if !ok {
		return nil, fmt.Errorf("apiserver: %s is not served", gvr)
	}
	return h, nil
}

func (o serverObjects) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	h, err := o.handler(gvr)
	if err != nil {
		return nil, err
	}
	obj, _, err := h.objects.get(ctx, ns, name)
	return obj, err
}

func (o serverObjects) Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	h, err := o.handler(gvr)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj.GetObjectKind().SetGroupVersionKind(h.res.GroupVersionKind())
	return h.createObject(ctx, obj, m.GetNamespace(), writeOptions{fieldManager: "myriad-apiserver"})
}

func (o serverObjects) Update(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	h, err := o.handler(gvr)
	if err != nil {
		return nil, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj.GetObjectKind().SetGroupVersionKind(h.res.GroupVersionKind())
	// obj carries the resourceVersion it was computed from: a conflict
	// goes back to the caller, which recomputes from the new object.
	return h.guaranteedUpdate(ctx, m.GetNamespace(), m.GetName(), "", writeOptions{fieldManager: "myriad-apiserver"},
		func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
}

func (o serverObjects) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, uid types.UID) error {
	h, err := o.handler(gvr)
	if err != nil {
		return err
	}
	_, _, err = h.deleteObject(ctx, ns, name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}, true)
	return err
}

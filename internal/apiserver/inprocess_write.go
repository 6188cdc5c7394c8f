package apiserver

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Objects writes objects through the server's own create and update
// paths (strategy, admission, validation, managedFields), as the server's
// loopback identity: for the controllers that upstream runs inside the
// API server over a loopback client (the aggregator's APIService
// registration and availability checks). Reads come from the store.
type Objects struct{ s *Server }

// Objects returns the server's in-process writer; usable after New, its
// writes succeed once Start has filled the caches.
func (s *Server) Objects() Objects { return Objects{s} }

func (o Objects) ctx(ctx context.Context) context.Context {
	if _, ok := request.UserFrom(ctx); ok {
		return ctx
	}
	return request.WithUser(ctx, bootstrapUser)
}

// Get reads the stored object (consistent, not from the cache).
func (o Objects) Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	return serverObjects(o).Get(o.ctx(ctx), gvr, ns, name)
}

// Create creates obj; an existing object is AlreadyExists.
func (o Objects) Create(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	return serverObjects(o).Create(o.ctx(ctx), gvr, obj)
}

// Update replaces the object; obj's resourceVersion, when set, must be
// the stored one (409 Conflict otherwise).
func (o Objects) Update(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	return serverObjects(o).Update(o.ctx(ctx), gvr, obj)
}

// UpdateStatus writes obj through the status subresource: only its
// status (and what the status strategy lets through) changes.
func (o Objects) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	h, err := serverObjects(o).handler(gvr)
	if err != nil {
		return nil, err
	}
	if !h.res.HasSubresource("status") {
		return nil, apierrors.NewNotFound(h.objects.gr, "status")
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj.GetObjectKind().SetGroupVersionKind(h.res.GroupVersionKind())
	return h.guaranteedUpdate(o.ctx(ctx), m.GetNamespace(), m.GetName(), "status", writeOptions{fieldManager: "myriad-apiserver"},
		func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
}

// Delete deletes the object if it is still obj (same UID).
func (o Objects) Delete(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, obj runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return serverObjects(o).Delete(o.ctx(ctx), gvr, ns, name, m.GetUID())
}

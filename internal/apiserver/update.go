package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxUpdateAttempts bounds retries of an unconditional update that keeps
// losing compare-and-swap races.
const maxUpdateAttempts = 16

func (h *resourceHandler) update(w http.ResponseWriter, r *http.Request, ns, name, subresource string) {
	data, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	obj, err := h.s.decodeObject(w, r, data, h.res.GroupVersionKind(), h.res.New())
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		h.s.writeError(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	if m.GetName() != name {
		h.s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name)))
		return
	}
	if err := h.checkNamespace(m, ns); err != nil {
		h.s.writeError(w, r, err)
		return
	}
	opts := writeOptionsFrom(r)
	out, err := h.guaranteedUpdate(r.Context(), ns, name, subresource, opts, func(old runtime.Object) (runtime.Object, error) {
		return obj.DeepCopyObject(), nil
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, out)
}

// updateFunc produces the desired object from the current one. It may be
// called more than once when the compare-and-swap loses a race and the
// desired object did not pin a resourceVersion.
type updateFunc func(old runtime.Object) (runtime.Object, error)

// guaranteedUpdate is the read-modify-CAS loop behind PUT, PATCH and the
// status/scale subresources. An object that names a resourceVersion must
// match the stored one (409 otherwise); one that does not is retried
// against the latest version.
func (h *resourceHandler) guaranteedUpdate(ctx context.Context, ns, name, subresource string, opts writeOptions, tryUpdate updateFunc) (runtime.Object, error) {
	for attempt := 0; ; attempt++ {
		old, rev, err := h.objects.get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		obj, err := tryUpdate(old)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		pinned := m.GetResourceVersion() != ""
		if pinned {
			want, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			if err != nil || want != rev {
				if err != nil {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", m.GetResourceVersion()))
				}
				return nil, conflictError(h.objects.gr, name)
			}
		}
		out, finish, err := h.prepareUpdate(ctx, obj, old, subresource, opts)
		if err != nil {
			return nil, err
		}
		if opts.dryRun {
			finish(false)
			return out, nil
		}
		if done, err := h.finishDeletionIfFinalized(ctx, ns, name, out, rev); done {
			finish(err == nil)
			return out, err
		}
		if unchanged, err := h.sameStored(out, old); err == nil && unchanged {
			finish(false)
			return old, nil
		}
		stored, err := h.objects.update(ctx, ns, name, out, rev)
		finish(err == nil)
		if err == nil {
			return stored, nil
		}
		if apierrors.IsConflict(err) && !pinned && attempt < maxUpdateAttempts {
			continue
		}
		return nil, err
	}
}

// prepareUpdate applies the strategy of the main resource or of a
// subresource, validates, and records managed fields. Unless it fails, the
// caller must call finish once with whether the result was stored (see
// resourceHooks.beforeUpdate).
func (h *resourceHandler) prepareUpdate(ctx context.Context, obj, old runtime.Object, subresource string, opts writeOptions) (_ runtime.Object, finish func(written bool), _ error) {
	m, _ := meta.Accessor(obj)
	oldMeta, _ := meta.Accessor(old)
	// System fields belong to the server, whatever the client sent.
	m.SetUID(oldMeta.GetUID())
	m.SetCreationTimestamp(oldMeta.GetCreationTimestamp())
	m.SetDeletionTimestamp(oldMeta.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(oldMeta.GetDeletionGracePeriodSeconds())
	m.SetResourceVersion(oldMeta.GetResourceVersion())
	m.SetSelfLink("")
	gk := h.res.GroupVersionKind().GroupKind()
	switch subresource {
	case "":
		h.res.Strategy.PrepareForUpdate(ctx, obj, old)
		if errs := h.res.Strategy.ValidateUpdate(ctx, obj, old); len(errs) > 0 {
			return nil, nil, invalidError(gk, m.GetName(), errs)
		}
	case "status":
		if h.res.Status == nil {
			return nil, nil, apierrors.NewNotFound(h.objects.gr, m.GetName())
		}
		h.res.Status.PrepareForStatusUpdate(ctx, obj, old)
		if errs := h.res.Status.ValidateStatusUpdate(ctx, obj, old); len(errs) > 0 {
			return nil, nil, invalidError(gk, m.GetName(), errs)
		}
	default:
		return nil, nil, apierrors.NewNotFound(h.objects.gr, m.GetName())
	}
	finish = func(bool) {}
	if h.hooks.beforeUpdate != nil {
		var err error
		if finish, err = h.hooks.beforeUpdate(ctx, obj, old); err != nil {
			return nil, nil, err
		}
	}
	out, err := h.s.fields.trackUpdate(h.res, obj, old, opts.fieldManager, subresource)
	if err != nil {
		finish(false)
		return nil, nil, err
	}
	return out, finish, nil
}

// sameStored reports whether obj would store exactly the bytes old has, so
// a no-op update neither writes nor bumps resourceVersion, as upstream.
func (h *resourceHandler) sameStored(obj, old runtime.Object) (bool, error) {
	a, err := h.objects.encode(obj)
	if err != nil {
		return false, err
	}
	b, err := h.objects.encode(old.DeepCopyObject())
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// finishDeletionIfFinalized removes an object that is being deleted once its
// last finalizer is gone. done reports whether it handled the write.
func (h *resourceHandler) finishDeletionIfFinalized(ctx context.Context, ns, name string, obj runtime.Object, rev int64) (bool, error) {
	m, _ := meta.Accessor(obj)
	if m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
		return false, nil
	}
	if h.hooks.keepOnDelete != nil && h.hooks.keepOnDelete(obj) {
		return false, nil
	}
	if g := m.GetDeletionGracePeriodSeconds(); g != nil && *g > 0 {
		// A graceful deletion in progress (a pod): the kubelet finishes it.
		return false, nil
	}
	err := h.objects.delete(ctx, ns, name, rev)
	if err == nil && h.hooks.afterDelete != nil {
		h.hooks.afterDelete(obj)
	}
	return true, err
}

// systemUpdate is a compare-and-swap loop for changes the server makes on
// its own authority (binding, finalize, scale): mutate gets a private copy
// of the latest object; no strategy runs, the caller vouches for the change.
func (h *resourceHandler) systemUpdate(ctx context.Context, ns, name string, mutate updateFunc) (runtime.Object, error) {
	for attempt := 0; ; attempt++ {
		old, rev, err := h.objects.get(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		obj, err := mutate(old)
		if err != nil {
			return nil, err
		}
		if done, err := h.finishDeletionIfFinalized(ctx, ns, name, obj, rev); done {
			return obj, err
		}
		out, err := h.objects.update(ctx, ns, name, obj, rev)
		if apierrors.IsConflict(err) && attempt < maxUpdateAttempts {
			continue
		}
		return out, err
	}
}

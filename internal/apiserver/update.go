package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/storage"
)

func (h *resourceHandler) update(w http.ResponseWriter, r *http.Request, ns, name, subresource string) {
	data, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	obj, err := h.decodeBody(w, r, data)
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
//
// It starts from the watch cache's copy, as upstream's cachedExistingObject
// does, and saves a store read per write; any failure on a cached copy (a
// conflict, an error from tryUpdate or validation, a no-op) is retried
// once on the store's, so a cache that is behind never shows.
func (h *resourceHandler) guaranteedUpdate(ctx context.Context, ns, name, subresource string, opts writeOptions, tryUpdate updateFunc) (runtime.Object, error) {
	fresh := false
	for {
		cur, err := h.current(ctx, ns, name, fresh)
		if err != nil {
			return nil, err
		}
		// retryFresh reports whether to go round again on the store's copy.
		retryFresh := func() bool {
			fresh = true
			return cur.cached
		}
		obj, err := tryUpdate(cur.obj)
		if err != nil {
			if retryFresh() {
				continue
			}
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		pinned := m.GetResourceVersion() != ""
		if pinned {
			want, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q", m.GetResourceVersion()))
			}
			if want != cur.rev {
				if retryFresh() {
					continue
				}
				return nil, conflictError(h.objects.gr, name)
			}
		}
		out, finish, err := h.prepareUpdate(ctx, obj, cur.obj, subresource, opts)
		if err != nil {
			if retryFresh() {
				continue
			}
			return nil, err
		}
		if opts.dryRun {
			finish(false)
			return out, nil
		}
		if done, err := h.finishDeletionIfFinalized(ctx, ns, name, out, cur.rev); done {
			finish(err == nil)
			if err != nil && retryFresh() {
				continue
			}
			return out, err
		}
		data, err := h.objects.encode(out)
		if err != nil {
			finish(false)
			return nil, err
		}
		if bytes.Equal(data, cur.raw) && !cur.stale {
			// A no-op neither writes nor bumps resourceVersion, as upstream;
			// a cached copy must be confirmed first.
			finish(false)
			if retryFresh() {
				continue
			}
			return cur.obj, nil
		}
		stored, err := h.objects.updateEncoded(ctx, ns, name, out, data, storage.KeyValue{Value: cur.raw, ModRevision: cur.rev})
		finish(err == nil)
		if err == nil {
			return stored, nil
		}
		if apierrors.IsConflict(err) {
			if retryFresh() {
				continue
			}
			// As upstream's GuaranteedUpdate: an update that pins no
			// resourceVersion is re-applied to the newer object until it
			// lands or the request ends. Every lost race is someone
			// else's write landing, so contention alone cannot make this
			// spin; a fixed bound answered 409 to patches that merely
			// queued behind five others.
			if !pinned && ctx.Err() == nil {
				continue
			}
		}
		return nil, err
	}
}

// objectState is an object as a write starts from it.
type objectState struct {
	obj runtime.Object // private to the caller
	rev int64
	raw []byte // the stored bytes; shared, read-only
	// cached: from the watch cache, which may be behind the store.
	cached bool
	// stale: stored encrypted with a key that no longer writes, so even
	// an unchanged object is written again (key rotation by rewriting,
	// as upstream's GuaranteedUpdate).
	stale bool
}

// current is the object a write starts from: the watch cache's copy unless
// fresh is set or the cache lacks it, else the store's.
func (h *resourceHandler) current(ctx context.Context, ns, name string, fresh bool) (objectState, error) {
	if !fresh && h.cache != nil {
		if kv, ok := h.cache.GetStored(h.objects.key(ns, name)); ok {
			if obj, err := h.objects.decode(kv); err == nil {
				return objectState{obj: obj, rev: kv.ModRevision, raw: kv.Value, cached: true}, nil
			}
		}
	}
	kv, obj, stale, err := h.objects.readStale(ctx, ns, name)
	if err != nil {
		return objectState{}, err
	}
	return objectState{obj: obj, rev: kv.ModRevision, raw: kv.Value, stale: stale}, nil
}

// prepareUpdate applies the strategy of the main resource or of a
// subresource, records managed fields, admits, validates and allocates
// (see package admission for the order). Unless it fails, the caller must
// call finish once with whether the result was stored.
func (h *resourceHandler) prepareUpdate(ctx context.Context, obj, old runtime.Object, subresource string, opts writeOptions) (_ runtime.Object, finish admission.Finish, _ error) {
	m, _ := meta.Accessor(obj)
	oldMeta, _ := meta.Accessor(old)
	// System fields belong to the server, whatever the client sent.
	m.SetUID(oldMeta.GetUID())
	m.SetCreationTimestamp(oldMeta.GetCreationTimestamp())
	m.SetDeletionTimestamp(oldMeta.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(oldMeta.GetDeletionGracePeriodSeconds())
	m.SetResourceVersion(oldMeta.GetResourceVersion())
	m.SetSelfLink("")
	part, isPart := h.res.PartStrategy(subresource)
	switch {
	case subresource == "":
		h.res.Strategy.PrepareForUpdate(ctx, obj, old)
	case isPart:
		part.PrepareForStatusUpdate(ctx, obj, old)
	default:
		return nil, nil, apierrors.NewNotFound(h.objects.gr, m.GetName())
	}
	// Managed fields before mutating admission, as upstream's update and
	// patch handlers: a plugin's changes belong to no manager.
	obj = h.fields.trackUpdate(h.res, obj, old, opts.fieldManager, subresource)
	m, _ = meta.Accessor(obj) // the same type as before
	attrs := h.attributes(ctx, admission.Update, m.GetNamespace(), m.GetName(), subresource, obj, old, opts)
	if !opts.admitted {
		if err := h.admitTracked(ctx, attrs); err != nil {
			return nil, nil, err
		}
	}
	var errs field.ErrorList
	if subresource == "" {
		errs = h.res.Strategy.ValidateUpdate(ctx, obj, old)
	} else {
		errs = part.ValidateStatusUpdate(ctx, obj, old)
	}
	if len(errs) > 0 {
		return nil, nil, invalidError(h.res.GroupVersionKind().GroupKind(), m.GetName(), errs)
	}
	finish, err := h.s.admission.Allocate(ctx, attrs)
	if err != nil {
		return nil, nil, err
	}
	if !opts.admitted {
		if err := h.s.admission.Validate(ctx, attrs); err != nil {
			finish(false)
			return nil, nil, err
		}
	}
	return obj, finish, nil
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
	return true, h.removeObject(ctx, ns, name, obj, rev, &metav1.DeleteOptions{})
}

// removeObject deletes obj, stored at rev, from the store and gives back
// what it held (a Service's addresses) once it is gone. It does not admit:
// the delete that asked for the removal was admitted, or the server
// removes the object on its own authority (the last finalizer is gone).
func (h *resourceHandler) removeObject(ctx context.Context, ns, name string, obj runtime.Object, rev int64, opts *metav1.DeleteOptions) error {
	attrs := h.deleteAttributes(ctx, ns, name, opts)
	attrs.OldObject = obj
	finish, err := h.s.admission.Allocate(ctx, attrs)
	if err != nil {
		return err
	}
	err = h.objects.delete(ctx, ns, name, rev)
	finish(err == nil)
	return err
}

// systemUpdate is a compare-and-swap loop for changes the server makes on
// its own authority (binding, finalize, scale): mutate gets a private copy
// of the latest object; no strategy runs, the caller vouches for the change.
// Like guaranteedUpdate it starts from the watch cache's copy and retries a
// failure on it once on the store's.
func (h *resourceHandler) systemUpdate(ctx context.Context, ns, name string, mutate updateFunc) (runtime.Object, error) {
	fresh := false
	for {
		cur, err := h.current(ctx, ns, name, fresh)
		if err != nil {
			return nil, err
		}
		retryFresh := func() bool {
			fresh = true
			return cur.cached
		}
		obj, err := mutate(cur.obj)
		if err != nil {
			if retryFresh() {
				continue
			}
			return nil, err
		}
		if done, err := h.finishDeletionIfFinalized(ctx, ns, name, obj, cur.rev); done {
			if err != nil && retryFresh() {
				continue
			}
			return obj, err
		}
		data, err := h.objects.encode(obj)
		if err != nil {
			return nil, err
		}
		out, err := h.objects.updateEncoded(ctx, ns, name, obj, data, storage.KeyValue{Value: cur.raw, ModRevision: cur.rev})
		if apierrors.IsConflict(err) {
			if retryFresh() {
				continue
			}
			if ctx.Err() == nil {
				continue // as guaranteedUpdate
			}
		}
		return out, err
	}
}

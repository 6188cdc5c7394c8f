package apiserver

import (
	"context"
	"fmt"
	"mime"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/myriad-k8s/myriad/internal/patch"
)

func (h *resourceHandler) patch(w http.ResponseWriter, r *http.Request, ns, name, subresource string) {
	data, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		h.s.writeError(w, r, unsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	pt := types.PatchType(mt)
	validation, err := fieldValidation(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	opts := writeOptionsFrom(r)
	q := r.URL.Query()
	force := q.Get("force") == "true"
	if pt == types.ApplyPatchType || pt == types.ApplyYAMLPatchType {
		if q.Get("fieldManager") == "" {
			h.s.writeError(w, r, apierrors.NewBadRequest("fieldManager is required for apply requests"))
			return
		}
		out, created, err := h.apply(r.Context(), ns, name, subresource, data, opts, force, validation, w)
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		code := http.StatusOK
		if created {
			code = http.StatusCreated
		}
		h.respond(w, r, code, out)
		return
	}
	if force {
		h.s.writeError(w, r, apierrors.NewBadRequest("force may only be set for apply patches"))
		return
	}
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		h.s.writeError(w, r, unsupportedMediaType(string(pt)))
		return
	}
	var warnings []string
	out, err := h.guaranteedUpdate(r.Context(), ns, name, subresource, opts, func(old runtime.Object) (runtime.Object, error) {
		res, err := patch.Apply(pt, old, data, patch.Options{Kind: h.res.GroupVersionKind(), FieldValidation: validation})
		if err != nil {
			return nil, err
		}
		warnings = res.Warnings
		if h.custom != nil {
			unknown, err := h.custom.unknownFields(r, res.Object)
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, unknown...)
		}
		if err := h.checkPatchedIdentity(res.Object, old); err != nil {
			return nil, err
		}
		return unpinUnlessChanged(res.Object, old), nil
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	addWarnings(w, warnings)
	h.respond(w, r, http.StatusOK, out)
}

// checkPatchedIdentity refuses patches that rename or move the object.
func (h *resourceHandler) checkPatchedIdentity(obj, old runtime.Object) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	om, _ := meta.Accessor(old)
	if m.GetName() != om.GetName() {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), om.GetName()))
	}
	if m.GetNamespace() != om.GetNamespace() {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetUID() != "" && m.GetUID() != om.GetUID() {
		//lint:ignore ST1005 upstream's message, which clients match
		return apierrors.NewConflict(h.objects.gr, om.GetName(), fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", m.GetUID(), om.GetUID()))
	}
	return nil
}

// apply is server-side apply: merge the configuration into the live object
// under the manager's ownership, or create the object from it when it does
// not exist yet.
func (h *resourceHandler) apply(ctx context.Context, ns, name, subresource string, config []byte, opts writeOptions, force bool, validation string, w http.ResponseWriter) (runtime.Object, bool, error) {
	aopts := patch.ApplyOptions{Force: force, Subresource: subresource, FieldValidation: validation}
	applied := writeOptions{dryRun: opts.dryRun, fieldManager: applyManagerSentinel, applyManager: opts.fieldManager}
	for {
		var warnings []string
		out, err := h.guaranteedUpdate(ctx, ns, name, subresource, applied, func(cur runtime.Object) (runtime.Object, error) {
			obj, ws, err := h.fields.managers.Apply(cur, config, opts.fieldManager, aopts)
			if err != nil {
				return nil, err
			}
			warnings = ws
			return unpinUnlessChanged(obj, cur), h.checkPatchedIdentity(obj, cur)
		})
		if !apierrors.IsNotFound(err) || subresource != "" {
			addWarnings(w, warnings)
			return out, false, err
		}
		fresh := h.res.New()
		fm, _ := meta.Accessor(fresh)
		fm.SetName(name)
		fm.SetNamespace(ns)
		fresh.GetObjectKind().SetGroupVersionKind(h.res.GroupVersionKind())
		obj, warnings, err := h.fields.managers.Apply(fresh, config, opts.fieldManager, aopts)
		if err != nil {
			return nil, false, err
		}
		if err := h.checkPatchedIdentity(obj, fresh); err != nil {
			return nil, false, err
		}
		out, err = h.createObject(ctx, obj, ns, applied)
		if apierrors.IsAlreadyExists(err) && ctx.Err() == nil {
			continue // raced with a create: apply to that object instead
		}
		addWarnings(w, warnings)
		return out, err == nil, err
	}
}

func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, wn := range warnings {
		addWarning(w, wn)
	}
}

// patchGeneric applies a non-apply patch to an object that is not stored
// as such (a Scale), by the request's patch type.
func (s *Server) patchGeneric(r *http.Request, cur runtime.Object, data []byte) (runtime.Object, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return nil, unsupportedMediaType(r.Header.Get("Content-Type"))
	}
	res, err := patch.Apply(types.PatchType(mt), cur, data, patch.Options{Kind: cur.GetObjectKind().GroupVersionKind()})
	if err != nil {
		return nil, err
	}
	return res.Object, nil
}

// applyManagerSentinel tells the write path that managed fields were
// already computed by Apply and must not be tracked again as an Update.
const applyManagerSentinel = "\x00apply"

// unpinUnlessChanged drops the resourceVersion a patch result inherited
// from the object it was applied to, so a patch that lost a race is
// re-applied to the newer object, as upstream does. A patch that set a
// different resourceVersion itself keeps it: that is an optimistic lock,
// and a mismatch is a 409.
func unpinUnlessChanged(obj, old runtime.Object) runtime.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	if om, err := meta.Accessor(old); err == nil && m.GetResourceVersion() == om.GetResourceVersion() {
		m.SetResourceVersion("")
	}
	return obj
}

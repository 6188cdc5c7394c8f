package apiserver

import (
	"context"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// maxGenerateNameAttempts bounds retries when a generated name collides.
const maxGenerateNameAttempts = 8

func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, ns string) {
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
	out, err := h.createObject(r.Context(), obj, ns, writeOptionsFrom(r))
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusCreated, out)
}

// writeOptions are the query parameters every write honours.
type writeOptions struct {
	dryRun       bool
	fieldManager string
	// applyManager is the manager of a server-side apply, whose
	// fieldManager is applyManagerSentinel.
	applyManager string
	// admitted: the caller ran admission on the subresource's own object
	// (a Scale), so the write of the main object is not admitted again.
	admitted bool
}

// manager is the field manager the client named.
func (o writeOptions) manager() string {
	if o.fieldManager == applyManagerSentinel {
		return o.applyManager
	}
	return o.fieldManager
}

func writeOptionsFrom(r *http.Request) writeOptions {
	q := r.URL.Query()
	manager := q.Get("fieldManager")
	if manager == "" {
		// Upstream's default manager is the User-Agent up to the first "/".
		manager, _, _ = strings.Cut(r.UserAgent(), "/")
	}
	return writeOptions{dryRun: q.Get("dryRun") == "All", fieldManager: manager}
}

// createObject runs the create path shared by POST, apply-create and the
// server's bootstrap: metadata, defaults, managed fields, mutating
// admission, validation, allocation, validating admission, then a durable
// write (see package admission for the order).
func (h *resourceHandler) createObject(ctx context.Context, obj runtime.Object, ns string, opts writeOptions) (runtime.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if err := h.checkNamespace(m, ns); err != nil {
		return nil, err
	}
	if m.GetResourceVersion() != "" {
		return nil, apierrors.NewBadRequest("resourceVersion should not be set on objects to be created")
	}
	sentName := m.GetName()
	generated := sentName == "" && m.GetGenerateName() != ""
	m.SetUID(types.UID(uuid.NewUUID()))
	m.SetCreationTimestamp(metav1.NewTime(h.s.clock.Now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	// The first name is generated before the strategy runs, as upstream's
	// store does, so strategies that copy the name into the object (a
	// Job's job-name labels) see it; a retry after a collision renames the
	// prepared object and lets such a strategy follow (registry.Renamer).
	if generated {
		m.SetName(m.GetGenerateName() + utilrand.String(5))
	}
	h.res.Strategy.PrepareForCreate(ctx, obj)
	// Managed fields before mutating admission, as upstream's create
	// handler (kubernetes#87671): what a plugin adds (a ServiceAccount's
	// token volume, a webhook's patch) belongs to no manager. The name is
	// not in any managed set, so a retry under another name keeps them.
	obj = h.fields.trackCreate(h.res, obj, opts.fieldManager)
	m, _ = meta.Accessor(obj) // the same type as before
	// Admitted once, under the name the client sent, as upstream: a retry
	// after a generated name collided is the same request.
	attrs := h.attributes(ctx, admission.Create, m.GetNamespace(), sentName, "", obj, nil, opts)
	if err := h.admitTracked(ctx, attrs); err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		if generated && attempt > 0 {
			oldName := m.GetName()
			m.SetName(m.GetGenerateName() + utilrand.String(5))
			if r, ok := h.res.Strategy.(registry.Renamer); ok {
				r.Rename(obj, oldName)
			}
		}
		if m.GetName() == "" {
			return nil, invalidError(h.res.GroupVersionKind().GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
		}
		if errs := h.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
			return nil, invalidError(h.res.GroupVersionKind().GroupKind(), m.GetName(), errs)
		}
		attrs.Name, attrs.Object = m.GetName(), obj
		finish, err := h.s.admission.Allocate(ctx, attrs)
		if err != nil {
			return nil, err
		}
		if err := h.s.admission.Validate(ctx, attrs); err != nil {
			finish(false)
			return nil, err
		}
		if opts.dryRun {
			finish(false)
			return obj, nil
		}
		out, err := h.objects.create(ctx, m.GetNamespace(), m.GetName(), obj)
		finish(err == nil)
		if err != nil {
			if generated && apierrors.IsAlreadyExists(err) && attempt < maxGenerateNameAttempts {
				continue
			}
			return nil, err
		}
		return out, nil
	}
}

// checkNamespace fills in or checks the object's namespace against the URL.
func (h *resourceHandler) checkNamespace(m metav1.Object, ns string) error {
	if !h.res.Namespaced {
		if m.GetNamespace() != "" {
			m.SetNamespace("")
		}
		return nil
	}
	switch {
	case m.GetNamespace() == "":
		m.SetNamespace(ns)
	case m.GetNamespace() != ns:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetNamespace() == "" {
		return apierrors.NewBadRequest("a namespace is required for " + h.res.Resource)
	}
	return nil
}

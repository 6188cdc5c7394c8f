package apiserver

import (
	"context"
	"fmt"
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

	"github.com/myriad-k8s/myriad/internal/cache"
)

// maxGenerateNameAttempts bounds retries when a generated name collides.
const maxGenerateNameAttempts = 8

func (h *resourceHandler) create(w http.ResponseWriter, r *http.Request, ns string) {
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

// createObject runs the create path shared by POST, apply-create and
// subresources that create (binding): metadata, defaults, validation,
// allocation, managed fields, then a durable write.
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
	if h.res.Namespaced {
		if err := h.s.requireNamespace(ctx, m.GetNamespace()); err != nil {
			return nil, err
		}
	}
	generated := m.GetName() == "" && m.GetGenerateName() != ""
	m.SetUID(types.UID(uuid.NewUUID()))
	m.SetCreationTimestamp(metav1.NewTime(h.s.clock.Now().Truncate(1e9)))
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
	h.res.Strategy.PrepareForCreate(ctx, obj)
	for attempt := 0; ; attempt++ {
		if generated {
			m.SetName(m.GetGenerateName() + utilrand.String(5))
		}
		if m.GetName() == "" {
			return nil, invalidError(h.res.GroupVersionKind().GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
		}
		if errs := h.res.Strategy.Validate(ctx, obj); len(errs) > 0 {
			return nil, invalidError(h.res.GroupVersionKind().GroupKind(), m.GetName(), errs)
		}
		if h.hooks.beforeCreate != nil {
			if err := h.hooks.beforeCreate(ctx, obj, opts.dryRun); err != nil {
				return nil, err
			}
		}
		tracked, err := h.s.fields.trackCreate(h.res, obj, opts.fieldManager)
		if err != nil {
			return nil, err
		}
		if opts.dryRun {
			return tracked, nil
		}
		out, err := h.objects.create(ctx, m.GetNamespace(), m.GetName(), tracked)
		if err != nil {
			if h.hooks.createFailed != nil {
				h.hooks.createFailed(obj)
			}
			if generated && apierrors.IsAlreadyExists(err) && attempt < maxGenerateNameAttempts {
				continue
			}
			return nil, err
		}
		if h.hooks.afterCreate != nil {
			h.hooks.afterCreate(obj)
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

// requireNamespace refuses creation in a namespace that does not exist or
// is terminating, as upstream's NamespaceLifecycle admission does. It asks
// the namespaces cache as it stands (a store read per create cost a tenth
// of the create path) and only reads the store when the cache has not seen
// the namespace yet, so a namespace created a moment ago is found.
func (s *Server) requireNamespace(ctx context.Context, ns string) error {
	nsObj, err := s.namespaces.cache.Get(ctx, s.namespaces.objects.key("", ns), "0")
	if cache.IsNotFound(err) {
		nsObj, _, err = s.namespaces.objects.get(ctx, "", ns)
	}
	if err != nil {
		if cache.IsNotFound(err) || apierrors.IsNotFound(err) {
			return apierrors.NewNotFound(s.namespaces.objects.gr, ns)
		}
		return err
	}
	if m, err := meta.Accessor(nsObj); err == nil && m.GetDeletionTimestamp() != nil {
		return apierrors.NewForbidden(s.namespaces.objects.gr, ns, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", ns))
	}
	return nil
}

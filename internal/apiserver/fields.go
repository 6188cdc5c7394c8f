package apiserver

import (
	"context"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
	"github.com/myriad-k8s/myriad/internal/patch"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// csrGVK is the one Kind whose status subresource resets more than spec.
var csrGVK = certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest")

// fieldTracker keeps managedFields current on every write and runs
// server-side apply, through upstream's field managers.
type fieldTracker struct {
	managers *patch.FieldManagers
	log      func(msg string, args ...any)
}

func newFieldTracker(scheme *runtime.Scheme, reg *registry.Registry, tc managedfields.TypeConverter, log func(string, ...any)) (*fieldTracker, error) {
	statusKinds := map[schema.GroupVersionKind]bool{}
	for _, r := range reg.Resources() {
		if r.Status != nil {
			statusKinds[r.GroupVersionKind()] = true
		}
	}
	fm, err := patch.NewFieldManagers(patch.FieldManagersConfig{
		TypeConverter: tc,
		Scheme:        scheme,
		ResetFields: func(gvk schema.GroupVersionKind, subresource string) *fieldpath.Set {
			if !statusKinds[gvk] {
				return nil
			}
			// The main resource does not own status, and a status writer
			// owns nothing but status, as upstream's GetResetFields.
			switch {
			case subresource == "status" && gvk == csrGVK:
				// Upstream's csrStatusStrategy: conditions too.
				return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("status", "conditions"))
			case subresource == "status":
				return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"))
			case subresource == "approval":
				// A CSR's approval writer owns only the conditions.
				return fieldpath.NewSet(fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("status", "certificate"))
			}
			return fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
		},
	})
	if err != nil {
		return nil, fmt.Errorf("field managers: %w", err)
	}
	return &fieldTracker{managers: fm, log: log}, nil
}

// trackCreate records manager's fields for a create; creates of equal
// objects share the work (patch.FieldManagers.Create).
func (f *fieldTracker) trackCreate(res *registry.Resource, obj runtime.Object, manager string) runtime.Object {
	if manager == applyManagerSentinel {
		return obj
	}
	out, err := f.managers.Create(res.New(), obj, manager)
	return f.settle(obj, out, err)
}

// trackUpdate records manager's fields for an update. A heartbeat the
// resource recognizes (registry.Resource.Heartbeat) takes the short way
// when its managedFields allow, with upstream's result either way.
func (f *fieldTracker) trackUpdate(res *registry.Resource, obj, old runtime.Object, manager, subresource string) runtime.Object {
	if manager == applyManagerSentinel {
		return obj
	}
	if res.Heartbeat != nil {
		if changed, ok := res.Heartbeat(old, obj); ok {
			if out, ok := f.managers.UpdateKnown(old, obj, manager, subresource, changed); ok {
				return out
			}
		}
	}
	out, err := f.managers.Update(old, obj, manager, subresource)
	return f.settle(obj, out, err)
}

// settle is the object to write after the field managers returned out and
// err. A failure (only a bug or corrupt stored managedFields cause one)
// must not fail the write: upstream keeps the old managedFields and logs,
// and so do we.
func (f *fieldTracker) settle(obj, out runtime.Object, err error) runtime.Object {
	if err != nil {
		f.log("updating managedFields failed", "err", err)
	}
	if out == nil {
		return obj
	}
	return out
}

// admitTracked runs mutating admission on an object whose managedFields
// were just recorded. As upstream's managedFieldsValidatingAdmissionController,
// a plugin that leaves them undecodable (an outdated webhook that dropped
// or mangled them) has them put back as recorded, with a warning, rather
// than failing the write or storing what no manager can read. Plugins that
// leave them alone, nearly all writes, cost no decode.
func (h *resourceHandler) admitTracked(ctx context.Context, attrs *admission.Attributes) error {
	m, err := meta.Accessor(attrs.Object)
	if err != nil {
		return h.s.admission.Admit(ctx, attrs)
	}
	recorded := slices.Clone(m.GetManagedFields())
	if err := h.s.admission.Admit(ctx, attrs); err != nil {
		return err
	}
	after := m.GetManagedFields()
	if patch.SameManagedFields(after, recorded) {
		return nil
	}
	if err := managedfields.ValidateManagedFields(after); err != nil {
		m.SetManagedFields(recorded)
		request.AddWarning(ctx, fmt.Sprintf(fieldmanager.InvalidManagedFieldsAfterMutatingAdmissionWarningFormat, err))
	}
	return nil
}

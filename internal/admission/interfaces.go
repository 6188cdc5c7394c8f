package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// Operation is the kind of write being admitted, spelled as upstream's
// admission.Operation (and AdmissionReview's request.operation).
type Operation string

const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe one write as admission sees it. The REST handlers
// fill them in; plugins read them, and mutating plugins change Object in
// place.
type Attributes struct {
	Operation Operation
	// Resource and Subresource are what the URL addressed (pods and
	// "binding" for a bind); Kind is Object's kind (a Binding there).
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	// Namespace is empty for cluster-scoped resources. Name may be empty on
	// a create that asks for a generated name.
	Namespace, Name string
	// Object is the object being written: nil on DELETE and CONNECT.
	// OldObject is the stored object: nil on CREATE and CONNECT and in
	// the mutating phase of a DELETE (the object is read after it).
	// OldObject is shared and must not be changed.
	Object, OldObject runtime.Object
	// User is who asks; nil for the server's own writes made without one.
	User *request.User
	// DryRun: the write is not persisted; plugins with side effects must
	// not keep them.
	DryRun bool
	// Options are the request's options: *metav1.CreateOptions,
	// *metav1.UpdateOptions or *metav1.DeleteOptions (a patch is an update
	// or, by apply, a create, as upstream).
	Options runtime.Object
}

// GroupResource is a's resource without its version.
func (a *Attributes) GroupResource() schema.GroupResource { return a.Resource.GroupResource() }

// Interface is every plugin: Handles says which operations it has an
// opinion on, so the chain skips it for the others.
type Interface interface {
	Handles(op Operation) bool
}

// MutationInterface is a mutating plugin. Admit may change a.Object (never
// a.OldObject) and refuses the write by returning an error, which the
// client receives as it is: return a Kubernetes error
// (apierrors.NewForbidden, NewInvalid, ...), or it becomes a 500.
type MutationInterface interface {
	Interface
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a validating plugin: it sees the object as it will
// be stored and may only refuse it. It must not change a.Object.
type ValidationInterface interface {
	Interface
	Validate(ctx context.Context, a *Attributes) error
}

// AllocationInterface is a step that takes something outside the object
// for it (a Service's ClusterIP and node ports) and must learn whether the
// write it took it for was stored. Upstream this is not admission but the
// service registry's BeginCreate/BeginUpdate hooks; it sits at the same
// point of every write and needs the same attributes, so the chain runs it
// too (see doc.go for where).
//
// Allocate may fill in a.Object. Unless it fails, the caller must call the
// Finish it returns exactly once: Finish(true) once the write is stored,
// Finish(false) when it is not (dry run, refused later, lost a
// compare-and-swap, a no-op). On a DELETE, Allocate sees OldObject only
// and Finish(true) releases what it held. Allocate that fails keeps
// nothing.
type AllocationInterface interface {
	Interface
	Allocate(ctx context.Context, a *Attributes) (Finish, error)
}

// Finish ends an allocation: written reports whether the write is stored.
type Finish func(written bool)

// NoFinish is the Finish of an allocation that took nothing.
func NoFinish(bool) {}

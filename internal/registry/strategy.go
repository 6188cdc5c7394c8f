package registry

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// object is what every served Kind is: a runtime.Object with ObjectMeta.
type object interface {
	runtime.Object
	metav1.Object
}

// behavior is the per-Kind data the generic strategy turns into Strategy
// and StatusStrategy. Each resource file fills one in; every func may be nil
// when the Kind has nothing to do at that step. Keeping the mechanics
// (generation, status carry-over, metadata validation) in one place is what
// keeps the resource files to their upstream-specific rules.
type behavior[T object] struct {
	// namespaced decides whether metadata.namespace is required.
	namespaced bool
	// name validates metadata.name (DNS subdomain for most kinds).
	name apivalidation.ValidateNameFunc

	// specChanged, when set, makes the Kind track metadata.generation: 1 on
	// create, +1 on an update for which it reports true.
	specChanged func(obj, old T) bool

	// creator records the requesting user in the object on create (a
	// CSR's spec.username); u is nil when the request carries no user
	// (the server's own writes).
	creator func(obj T, u *request.User)

	// resetStatus clears status on create (Kinds with a status
	// subresource); keepStatus copies old's status into obj on a
	// main-resource update; keepSpec copies into obj everything a status
	// update must not change.
	resetStatus func(obj T)
	keepStatus  func(obj, old T)
	keepSpec    func(obj, old T)

	// defaults mirrors upstream SetDefaults_* (and the defaulting
	// admission plugins users see the effect of).
	defaults func(obj T)
	// prepareCreate / prepareUpdate are further Kind-specific steps run
	// after defaulting (e.g. a pod's initial status).
	prepareCreate func(obj T)
	prepareUpdate func(obj, old T)

	// validate checks everything but metadata on create and update;
	// validateCreate adds create-only rules; validateUpdate adds update-only rules (immutability) and
	// validateStatus the rules of a status update (metadata update rules
	// are always applied).
	validate       func(obj T) field.ErrorList
	validateCreate func(obj T) field.ErrorList
	validateUpdate func(obj, old T) field.ErrorList
	validateStatus func(obj, old T) field.ErrorList
}

// strategy implements Strategy and StatusStrategy for one Kind.
type strategy[T object] struct{ b behavior[T] }

var (
	_ Strategy       = strategy[object]{}
	_ StatusStrategy = strategy[object]{}
)

func (s strategy[T]) PrepareForCreate(ctx context.Context, o runtime.Object) {
	obj := o.(T)
	if s.b.creator != nil {
		u, _ := request.UserFrom(ctx)
		s.b.creator(obj, u)
	}
	if s.b.resetStatus != nil {
		s.b.resetStatus(obj)
	}
	if s.b.defaults != nil {
		s.b.defaults(obj)
	}
	if s.b.specChanged != nil {
		obj.SetGeneration(1)
	}
	if s.b.prepareCreate != nil {
		s.b.prepareCreate(obj)
	}
}

func (s strategy[T]) PrepareForUpdate(_ context.Context, o, oldObj runtime.Object) {
	obj, old := o.(T), oldObj.(T)
	if s.b.keepStatus != nil {
		s.b.keepStatus(obj, old)
	}
	if s.b.defaults != nil {
		s.b.defaults(obj)
	}
	// Users may never write generation; upstream's BeforeUpdate restores it
	// before the strategy decides whether to bump it.
	obj.SetGeneration(old.GetGeneration())
	if s.b.specChanged != nil && s.b.specChanged(obj, old) {
		obj.SetGeneration(old.GetGeneration() + 1)
	}
	if s.b.prepareUpdate != nil {
		s.b.prepareUpdate(obj, old)
	}
}

func (s strategy[T]) Validate(_ context.Context, o runtime.Object) field.ErrorList {
	obj := o.(T)
	errs := apivalidation.ValidateObjectMetaAccessor(obj, s.b.namespaced, s.b.name, field.NewPath("metadata"))
	if s.b.validate != nil {
		errs = append(errs, s.b.validate(obj)...)
	}
	if s.b.validateCreate != nil {
		errs = append(errs, s.b.validateCreate(obj)...)
	}
	return errs
}

func (s strategy[T]) ValidateUpdate(_ context.Context, o, oldObj runtime.Object) field.ErrorList {
	obj, old := o.(T), oldObj.(T)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
	if s.b.validate != nil {
		errs = append(errs, s.b.validate(obj)...)
	}
	if s.b.validateUpdate != nil {
		errs = append(errs, s.b.validateUpdate(obj, old)...)
	}
	return errs
}

func (s strategy[T]) PrepareForStatusUpdate(_ context.Context, o, oldObj runtime.Object) {
	obj, old := o.(T), oldObj.(T)
	if s.b.keepSpec != nil {
		s.b.keepSpec(obj, old)
	}
	obj.SetGeneration(old.GetGeneration())
}

func (s strategy[T]) ValidateStatusUpdate(_ context.Context, o, oldObj runtime.Object) field.ErrorList {
	obj, old := o.(T), oldObj.(T)
	errs := apivalidation.ValidateObjectMetaAccessorUpdate(obj, old, field.NewPath("metadata"))
	if s.b.validateStatus != nil {
		errs = append(errs, s.b.validateStatus(obj, old)...)
	}
	return errs
}

// statusOf returns the Status strategy for a Kind with a status
// subresource. It exists so resource files read "Status: statusOf(s)".
func statusOf[T object](s strategy[T]) StatusStrategy { return s }

// semanticChanged reports whether a and b differ semantically (quantities
// compared by value), the comparison upstream uses to bump generation.
func semanticChanged(a, b any) bool { return !apiequality.Semantic.DeepEqual(a, b) }

package registry

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/protoprune"
)

// Resource describes one served resource (one group/version/resource).
type Resource struct {
	// GroupVersion and Kind of the objects ("" group for core).
	GroupVersion schema.GroupVersion
	Kind         string
	// Resource is the plural lowercase name used in URLs ("pods").
	Resource     string
	SingularName string
	Namespaced   bool
	ShortNames   []string
	Categories   []string
	// Verbs served on the collection/object ("get", "list", "watch", "create",
	// "update", "patch", "delete", "deletecollection").
	Verbs []string
	// Subresources served besides the object itself: "status", "scale",
	// "binding", "eviction", … The API server implements the mechanics; the
	// registry says which exist.
	Subresources []string

	// New and NewList return empty objects of the Kind and its list.
	// NewList is nil for a Kind without a list (Binding), which must not
	// serve list or watch.
	New     func() runtime.Object
	NewList func() runtime.Object

	Strategy Strategy
	// Status is nil when the resource has no status subresource; then writes
	// to the object may change status freely.
	Status StatusStrategy

	// SelectableFields returns the field-selector fields of obj beyond
	// metadata.name and metadata.namespace, which the server adds itself
	// (e.g. pods: spec.nodeName, status.phase).
	SelectableFields func(obj runtime.Object) fields.Set

	// IndexSkip names the parts of the kind's protobuf message that
	// neither SelectableFields nor the labels read. The watch cache decodes
	// every object it stores only to index it, and leaves these out (with
	// metadata.managedFields, which no index reads either): for a pod its
	// containers, volumes and container statuses, most of its bytes. Nil:
	// nothing beyond managedFields.
	IndexSkip protoprune.Fields

	// Table returns the columns for kubectl get and the cells of one row,
	// like upstream's printers. Cells must line up with Columns.
	Table TableConvertor

	// Approval is set exactly when Subresources has "approval"
	// (certificate signing requests): the strategy of an update through
	// it, which may change only the Approved and Denied conditions.
	Approval StatusStrategy

	// Parts are further subresources that write one part of the object
	// through the generic GET/PUT/PATCH, each with its strategy (pods'
	// ephemeralcontainers and resize); each is listed in Subresources too.
	Parts map[string]StatusStrategy

	// Scale is set exactly when Subresources has "scale"; the server uses it
	// to serve autoscaling/v1 Scale without knowing the Kind.
	Scale *ScaleAccessor

	// DefaultPropagation is how a delete that names no propagation policy
	// treats the object's dependents; empty means Background. Upstream's
	// core/v1 ReplicationControllers orphan by default, kept for backwards
	// compatibility (their strategy's DefaultGarbageCollectionPolicy).
	DefaultPropagation metav1.DeletionPropagation

	// StorageKeyPrefix is "/<group or core>/<resource>"; keys are
	// prefix/<namespace>/<name> (prefix/<name> for cluster-scoped resources).
	StorageKeyPrefix string

	// Heartbeat, when set, recognizes writes that only move the kind's
	// heartbeat timestamps (a Lease's renewTime, a Node's conditions'
	// lastHeartbeatTime), so that the API server can record their
	// managedFields without comparing the whole objects.
	Heartbeat HeartbeatFunc

	// StorageVersion, when set, is the group version this resource's
	// objects are stored in: another served version of the same resource,
	// with the same StorageKeyPrefix, that the scheme converts to and from
	// (conversion.go). Empty: objects are stored as served.
	StorageVersion schema.GroupVersion
}

// GroupVersionResource of r.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Resource)
}

// GroupVersionKind of r.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// HasSubresource reports whether r serves the named subresource.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// PartStrategy returns the strategy of sub when sub is a subresource that
// updates a part of the object itself ("status", "approval"), served by
// the generic GET/PUT/PATCH; false for any other subresource.
func (r *Resource) PartStrategy(sub string) (StatusStrategy, bool) {
	var s StatusStrategy
	switch sub {
	case "status":
		s = r.Status
	case "approval":
		s = r.Approval
	default:
		s = r.Parts[sub]
	}
	return s, s != nil && r.HasSubresource(sub)
}

// ScaleAccessor reads and writes the scale of an object of the resource's
// Kind (deployments, replica sets, stateful sets).
type ScaleAccessor struct {
	// Scale returns obj's autoscaling/v1 Scale: name, namespace, uid,
	// resourceVersion and creationTimestamp of obj, spec.replicas,
	// status.replicas and the label selector as a string.
	Scale func(obj runtime.Object) *autoscalingv1.Scale
	// SetReplicas sets obj's desired replicas (spec.replicas); the caller
	// then writes obj through the main resource's PrepareForUpdate and
	// ValidateUpdate, as upstream's scale subresource does.
	SetReplicas func(obj runtime.Object, replicas int32)
}

// Strategy is the per-resource behaviour on create and update of the object
// (not its status subresource). Objects passed in are of the resource's Kind.
type Strategy interface {
	// PrepareForCreate clears fields the user may not set on create (status
	// for resources with a status subresource), sets generation to 1 where
	// the resource tracks it, and applies defaults.
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate carries over what an update of the main resource must
	// not change (status, when there is a status subresource), applies
	// defaults, and bumps generation when the spec changed.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// Validate returns every problem with a new object (ObjectMeta included),
	// with upstream field paths and messages.
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	// ValidateUpdate also enforces immutable fields against old.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// Renamer is implemented by a Strategy whose PrepareForCreate copies the
// object's name into the object (a Job's job-name labels). When a
// generated name collided, the API server renames the prepared object and
// calls Rename with the name it had, so those copies follow.
type Renamer interface {
	Rename(obj runtime.Object, oldName string)
}

// StatusStrategy is the behaviour of the status subresource.
type StatusStrategy interface {
	// PrepareForStatusUpdate keeps everything of old but status (and the
	// metadata a status writer may change, as upstream).
	PrepareForStatusUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateStatusUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// TableConvertor produces kubectl-get rows.
type TableConvertor interface {
	Columns() []metav1.TableColumnDefinition
	// Cells returns one row's cells; the first is conventionally the name.
	Cells(obj runtime.Object) []interface{}
}

package podcontrol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// PatchFunc sends a strategic merge patch to the object namespace/name
// and returns the patched object.
type PatchFunc func(ctx context.Context, namespace, name string, data []byte) (metav1.Object, error)

// RefManager adopts and releases objects (pods, ReplicaSets) for one
// controller object, as upstream's ControllerRefManager: it claims what it
// controls and still selects, adopts matching orphans, and releases what it
// controls but no longer selects.
type RefManager struct {
	Owner    metav1.Object
	GVK      schema.GroupVersionKind
	Selector labels.Selector
	// CanAdopt rechecks, with a live read, that the owner still exists
	// with the same UID and is not being deleted; it is called at most
	// once per claim, before the first adoption, because a cached owner
	// may already be gone.
	CanAdopt func(ctx context.Context) error
	Patch    PatchFunc

	once     sync.Once
	adoptErr error
}

// Claim returns the objects of objs that m's owner controls after adopting
// and releasing. Objects owned by another controller are never touched.
func Claim[T metav1.Object](ctx context.Context, m *RefManager, objs []T) ([]T, error) {
	var claimed []T
	var errs []error
	for _, o := range objs {
		ok, patched, err := m.claimOne(ctx, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			continue
		}
		// An adopted object is used as the patch returned it, so later
		// updates in the same sync carry the new ownerReference.
		if p, isT := patched.(T); isT && patched != nil {
			o = p
		}
		claimed = append(claimed, o)
	}
	return claimed, errors.Join(errs...)
}

func (m *RefManager) claimOne(ctx context.Context, o metav1.Object) (bool, metav1.Object, error) {
	match := m.Selector.Matches(labels.Set(o.GetLabels()))
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		if ref.UID != m.Owner.GetUID() {
			return false, nil, nil
		}
		if match {
			return true, nil, nil
		}
		// Ours but no longer selected: release it, unless we are being
		// deleted (then the garbage collector decides).
		if m.Owner.GetDeletionTimestamp() != nil {
			return false, nil, nil
		}
		if err := m.release(ctx, o); err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
				return false, nil, nil // gone or replaced meanwhile
			}
			return false, nil, err
		}
		return false, nil, nil
	}
	// An orphan.
	if m.Owner.GetDeletionTimestamp() != nil || !match || o.GetDeletionTimestamp() != nil {
		return false, nil, nil
	}
	patched, err := m.adopt(ctx, o)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			return false, nil, nil
		}
		return false, nil, err
	}
	return true, patched, nil
}

func (m *RefManager) adopt(ctx context.Context, o metav1.Object) (metav1.Object, error) {
	m.once.Do(func() {
		if m.CanAdopt != nil {
			m.adoptErr = m.CanAdopt(ctx)
		}
	})
	if m.adoptErr != nil {
		return nil, fmt.Errorf("can't adopt %s/%s: %w", o.GetNamespace(), o.GetName(), m.adoptErr)
	}
	ref := ControllerRef(m.Owner, m.GVK)
	data, err := json.Marshal(refPatch{Metadata: refPatchMeta{
		OwnerReferences: []any{ref},
		UID:             o.GetUID(),
	}})
	if err != nil {
		return nil, err
	}
	patched, err := m.Patch(ctx, o.GetNamespace(), o.GetName(), data)
	if err != nil {
		return nil, fmt.Errorf("adopting %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return patched, nil
}

func (m *RefManager) release(ctx context.Context, o metav1.Object) error {
	data, err := json.Marshal(refPatch{Metadata: refPatchMeta{
		OwnerReferences: []any{map[string]any{"$patch": "delete", "uid": m.Owner.GetUID()}},
		UID:             o.GetUID(),
	}})
	if err != nil {
		return err
	}
	if _, err := m.Patch(ctx, o.GetNamespace(), o.GetName(), data); err != nil {
		return fmt.Errorf("releasing %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// refPatch carries the object's UID so the patch fails (Conflict/Invalid)
// rather than touching a different object recreated under the same name.
type refPatch struct {
	Metadata refPatchMeta `json:"metadata"`
}

type refPatchMeta struct {
	OwnerReferences []any     `json:"ownerReferences"`
	UID             types.UID `json:"uid"`
}

// RecheckOwner is the usual CanAdopt: get returns the live owner (nil
// error) and this checks its UID and deletionTimestamp.
func RecheckOwner(owner metav1.Object, get func(ctx context.Context) (metav1.Object, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := get(ctx)
		if err != nil {
			return err
		}
		if fresh.GetUID() != owner.GetUID() {
			return fmt.Errorf("original %s/%s is gone: got uid %v, wanted %v", owner.GetNamespace(), owner.GetName(), fresh.GetUID(), owner.GetUID())
		}
		if fresh.GetDeletionTimestamp() != nil {
			return fmt.Errorf("%s/%s has just been deleted at %v", owner.GetNamespace(), owner.GetName(), fresh.GetDeletionTimestamp())
		}
		return nil
	}
}

// ResolveRef returns the owner ref names, fetched with get, if ref is of
// kind and the object found has ref's UID (not a newer namesake).
func ResolveRef[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) (T, bool) {
	var zero T
	if ref == nil || ref.Kind != kind {
		return zero, false
	}
	o, err := get(ref.Name)
	if err != nil || o.GetUID() != ref.UID {
		return zero, false
	}
	return o, true
}

// Selecting returns the owners whose selector matches set, the owners
// that may want to adopt an object so labelled. An empty or invalid
// selector matches nothing.
func Selecting[T any](owners []T, selector func(T) *metav1.LabelSelector, set map[string]string) []T {
	var out []T
	for _, o := range owners {
		sel, err := metav1.LabelSelectorAsSelector(selector(o))
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(set)) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// ResolveKey is the namespace/name key of what ResolveRef finds, "" when
// ref names none of ours: an OwnedEvents.Resolve.
func ResolveKey[T metav1.Object](ref *metav1.OwnerReference, kind string, get func(name string) (T, error)) string {
	o, ok := ResolveRef(ref, kind, get)
	if !ok {
		return ""
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// NewRefManager is the usual RefManager of owner (of gvk): adoption is
// rechecked with get, a live read of the owner by name (a typed client's
// Get, see RecheckOwner), and objects are adopted or released with patch
// (a typed client's Patch, of pods or ReplicaSets).
func NewRefManager[T, O metav1.Object](owner T, gvk schema.GroupVersionKind, selector labels.Selector,
	get func(ctx context.Context, name string, opts metav1.GetOptions) (T, error),
	patch func(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (O, error),
) *RefManager {
	return &RefManager{
		Owner:    owner,
		GVK:      gvk,
		Selector: selector,
		CanAdopt: RecheckOwner(owner, func(ctx context.Context) (metav1.Object, error) {
			return get(ctx, owner.GetName(), metav1.GetOptions{})
		}),
		Patch: func(ctx context.Context, _, name string, data []byte) (metav1.Object, error) {
			return patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
		},
	}
}

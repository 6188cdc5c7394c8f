package podcontrol

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/myriad-k8s/myriad/internal/controllers/reconcile"
)

// OwnedEvents turns the events of owned objects (a ReplicaSet's pods, a
// Deployment's ReplicaSets) into keys of their controllers, as upstream's
// workload controllers do:
//
//   - an object seen added, updated or deleted queues its controller; one
//     being deleted (deletionTimestamp set) counts as deleted already, as a
//     graceful deletion can take long and its replacement should not wait;
//   - a controller that lost it to another (or released it) is queued too;
//   - an orphan whose labels or controller changed is handed to Orphan,
//     which queues the controllers that may adopt it.
//
// Creations and deletions are recorded in Exp when it is set.
type OwnedEvents[T metav1.Object] struct {
	// Resolve returns the key of the controller ref names, "" when it is
	// not one of ours (another kind, or a namesake with another UID).
	Resolve func(namespace string, ref *metav1.OwnerReference) string
	// Queue receives the controllers' keys.
	Queue *reconcile.Loop[string]
	// Exp, if set, observes creations and deletions under the
	// controller's key.
	Exp *Expectations
	// Orphan, if set, is called with an object that has no controller
	// when it appears, changes labels or is released.
	Orphan func(obj T)
	// Updated, if set, is called after an update queued key, the
	// controller of cur (to schedule a later look, say).
	Updated func(key string, old, cur T)
}

// Handler returns the informer handler.
func (h OwnedEvents[T]) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{AddFunc: h.add, UpdateFunc: h.update, DeleteFunc: h.delete}
}

func (h OwnedEvents[T]) add(obj any) {
	o, ok := obj.(T)
	if !ok {
		return
	}
	if o.GetDeletionTimestamp() != nil {
		// A restarted controller seeing an object already being deleted.
		h.deleted(o)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(o); ref != nil {
		if key := h.Resolve(o.GetNamespace(), ref); key != "" {
			if h.Exp != nil {
				h.Exp.CreationObserved(key)
			}
			h.Queue.Add(key)
		}
		return
	}
	if h.Orphan != nil {
		h.Orphan(o)
	}
}

func (h OwnedEvents[T]) update(oldObj, curObj any) {
	old, ok1 := oldObj.(T)
	cur, ok2 := curObj.(T)
	if !ok1 || !ok2 || old.GetResourceVersion() == cur.GetResourceVersion() {
		return // periodic resync
	}
	labelsChanged := !labels.Equals(old.GetLabels(), cur.GetLabels())
	if cur.GetDeletionTimestamp() != nil {
		h.deleted(cur)
		if labelsChanged {
			h.deleted(old)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	if oldRef != nil && (curRef == nil || curRef.UID != oldRef.UID) {
		if key := h.Resolve(old.GetNamespace(), oldRef); key != "" {
			h.Queue.Add(key)
		}
	}
	if curRef != nil {
		if key := h.Resolve(cur.GetNamespace(), curRef); key != "" {
			h.Queue.Add(key)
			if h.Updated != nil {
				h.Updated(key, old, cur)
			}
		}
		return
	}
	if h.Orphan != nil && (labelsChanged || oldRef != nil) {
		h.Orphan(cur)
	}
}

func (h OwnedEvents[T]) delete(obj any) {
	if o, ok := reconcile.Object[T](obj); ok {
		h.deleted(o)
	}
}

// deleted queues the controller of o and observes the deletion.
func (h OwnedEvents[T]) deleted(o T) {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return
	}
	key := h.Resolve(o.GetNamespace(), ref)
	if key == "" {
		return
	}
	if h.Exp != nil {
		h.Exp.DeletionObserved(key, o.GetNamespace()+"/"+o.GetName())
	}
	h.Queue.Add(key)
}

package reconcile

import (
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// Events selects the informer notifications a handler from Watch sees.
type Events uint8

const (
	Adds Events = 1 << iota
	Updates
	Deletes
	// All is every notification.
	All = Adds | Updates | Deletes
)

// Watch registers on inf a handler calling f, for the selected events,
// with the object: the new one on updates, the last known one (tombstone
// unwrapped) on deletes. Handlers that compare old and new register
// cache.ResourceEventHandlerFuncs themselves.
func Watch(inf cache.SharedIndexInformer, ev Events, f func(obj any)) error {
	var h cache.ResourceEventHandlerFuncs
	if ev&Adds != 0 {
		h.AddFunc = f
	}
	if ev&Updates != 0 {
		h.UpdateFunc = func(_, cur any) { f(cur) }
	}
	if ev&Deletes != 0 {
		h.DeleteFunc = func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			f(obj)
		}
	}
	if _, err := inf.AddEventHandler(h); err != nil {
		return fmt.Errorf("adding event handler: %w", err)
	}
	return nil
}

// Handler pairs an informer with a handler, for AddHandlers.
type Handler struct {
	Informer cache.SharedIndexInformer
	Handler  cache.ResourceEventHandler
}

// AddHandlers registers each handler on its informer, stopping at the
// first error.
func AddHandlers(hs ...Handler) error {
	for _, h := range hs {
		if _, err := h.Informer.AddEventHandler(h.Handler); err != nil {
			return fmt.Errorf("adding event handler: %w", err)
		}
	}
	return nil
}

// EnqueueKey returns a handler function adding obj's namespace/name key
// to q.
func EnqueueKey(q Queue[string]) func(obj any) {
	return func(obj any) {
		if key, ok := Key(obj); ok {
			q.Add(key)
		}
	}
}

// Key returns obj's namespace/name key, unwrapping tombstones.
func Key(obj any) (string, bool) {
	k, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	return k, err == nil
}

// Object returns obj as a T, unwrapping a tombstone (the last known state
// of an object whose deletion the watch missed).
func Object[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	o, ok := obj.(T)
	return o, ok
}

// AddIndexers adds to inf the indexers it does not have yet, by name. A
// controller manager run again on the same shared informers (myriad up's,
// after it lost its Lease and stands by again) finds its indexes there
// already; client-go refuses a second indexer of the same name.
func AddIndexers(inf cache.SharedIndexInformer, indexers cache.Indexers) error {
	have := inf.GetIndexer().GetIndexers()
	missing := cache.Indexers{}
	for name, fn := range indexers {
		if _, ok := have[name]; !ok {
			missing[name] = fn
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return inf.AddIndexers(missing)
}

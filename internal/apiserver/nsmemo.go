package apiserver

import (
	"context"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
)

// maxNamespaceMemo bounds the memo; past it the memo starts over (names of
// deleted namespaces are otherwise only dropped when looked up again).
const maxNamespaceMemo = 16384

// namespaceMemo keeps the decoded namespaces admission reads on every
// create of a namespaced object — NamespaceLifecycle for its phase and
// PodSecurity for its labels, twice per pod create — so that the watch
// cache, which keeps stored bytes, does not decode the same namespace for
// each. An entry is used only while the cache holds the namespace at the
// same revision, so it is exactly as current as a cache read. The objects
// are shared: readers must not modify them.
type namespaceMemo struct {
	mu struct {
		sync.RWMutex
		byName map[string]memoNamespace
	}
}

type memoNamespace struct {
	rev int64
	obj runtime.Object
}

// get is the namespace name from the namespaces cache as it stands, from
// the memo when the cache has not changed it since.
func (m *namespaceMemo) get(ctx context.Context, h *resourceHandler, name string) (runtime.Object, error) {
	key := h.objects.key("", name)
	if rev, ok := h.cache.KeyRevision(key); ok {
		m.mu.RLock()
		e, hit := m.mu.byName[name]
		m.mu.RUnlock()
		if hit && e.rev == rev {
			return e.obj, nil
		}
	}
	obj, err := h.cache.Get(ctx, key, "0")
	if err != nil {
		m.mu.Lock()
		delete(m.mu.byName, name)
		m.mu.Unlock()
		return nil, err
	}
	acc, aerr := meta.Accessor(obj)
	if aerr != nil {
		return obj, nil
	}
	rev, perr := strconv.ParseInt(acc.GetResourceVersion(), 10, 64)
	if perr != nil {
		return obj, nil
	}
	m.mu.Lock()
	if m.mu.byName == nil || len(m.mu.byName) >= maxNamespaceMemo {
		m.mu.byName = map[string]memoNamespace{}
	}
	m.mu.byName[name] = memoNamespace{rev: rev, obj: obj}
	m.mu.Unlock()
	return obj, nil
}

package cache

import (
	"fmt"

	"github.com/myriad-k8s/myriad/internal/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// undecodable stands in, as an entry's obj, for a stored value that does not
// decode: one the server did not write (another writer of the store, a
// version skew) or damage the store's checksums did not catch. The key stays
// in the cache at its real revision so that reads of it fail with a 500
// naming the key and revision, instead of serving the previous version as
// if nothing had happened or dropping the object silently. An update keeps
// the previous version's labels and fields (apply), so selectors that found
// the object still find it — and fail — rather than list it as gone (a
// kubelet would kill a pod missing from its node's list). An object that
// never decoded has none and is found only by selectors they satisfy.
// Deleting it is the repair: watchers get a DELETED stub (window.go).
type undecodable struct{ err error }

func (u *undecodable) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *undecodable) DeepCopyObject() runtime.Object   { return u }

// undecodableEntry is the entry for kv, whose value failed to decode with err.
func (c *Cache) undecodableEntry(kv storage.KeyValue, err error) *entry {
	c.cfg.Logger.Error("stored object does not decode; reads of it fail until it is rewritten or deleted", "key", kv.Key, "rev", kv.ModRevision, "err", err)
	c.metrics.undecodable.Inc()
	e := &entry{rev: kv.ModRevision, createRev: kv.CreateRevision}
	e.setKey(c.cfg.Prefix, kv.Key)
	e.obj = &undecodable{err: fmt.Errorf("stored object %s at revision %d does not decode: %w", kv.Key, kv.ModRevision, err)}
	return e
}

// undecodableErr is the error reads of e return, nil for a decodable entry.
func undecodableErr(e *entry) error {
	if u, ok := e.obj.(*undecodable); ok {
		return internalError(u.err)
	}
	return nil
}

// stub is the object for a DELETED event of the undecodable entry e: an
// empty object of the type with e's namespace and name, at revision rev.
func (c *Cache) stub(e *entry, rev int64) runtime.Object {
	obj := c.cfg.NewFunc()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetNamespace(e.ns())
		m.SetName(e.name())
		m.SetResourceVersion(formatRV(rev))
	}
	return obj
}

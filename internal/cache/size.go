package cache

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Size is how much a cache holds: objects and their stored bytes.
type Size struct {
	Objects int64
	Bytes   int64
}

func (s Size) add(d Size) Size { return Size{Objects: s.Objects + d.Objects, Bytes: s.Bytes + d.Bytes} }

// Size estimates what a list of namespace ("" for all) with the given
// selectors (nil for none) returns, without walking the objects: the
// namespace's (or the whole cache's) count and bytes, or, when an
// indexed field or label narrows the list, that index bucket's count at
// the average object size. Selectors on unindexed fields and labels do
// not narrow it: the estimate is an upper bound, which is what flow
// control wants (charging a selective list as a full one errs on the side
// of protecting the server). It takes the read lock briefly and allocates
// nothing without selectors; it is meant to be called per request.
func (c *Cache) Size(namespace string, label labels.Selector, field fields.Selector) Size {
	c.mu.RLock()
	defer c.mu.RUnlock()
	st := c.mu.st
	sz := st.total
	if namespace != "" {
		sz = st.byNS[namespace]
	}
	if (label == nil && field == nil) || sz.Objects == 0 {
		return sz
	}
	pred := newPredicate(namespace, label, field)
	k, ok := pred.indexFor(st.fields, st.labels)
	if !ok {
		return sz
	}
	n := int64(0)
	if t := st.byValue[k]; t != nil {
		n = int64(t.Len())
	}
	// The bucket spans namespaces; a namespaced list gets no more than
	// its namespace holds.
	n = min(n, sz.Objects)
	return Size{Objects: n, Bytes: n * (sz.Bytes / sz.Objects)}
}

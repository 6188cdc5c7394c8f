package apiserver

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ListSize estimates, from gvr's watch cache and without walking it, how
// many objects and stored bytes a list of namespace ("" for all) with the
// selectors returns (cache.Size: an upper bound where selectors use no
// index). ok is false for resources without a cache. Flow control charges
// lists by it before they run.
func (s *Server) ListSize(gvr schema.GroupVersionResource, namespace string, label labels.Selector, field fields.Selector) (objects, bytes int64, ok bool) {
	h, found := s.handler(gvr)
	if !found || h.cache == nil || h.hooks.serve != nil {
		return 0, 0, false
	}
	sz := h.cache.Size(namespace, label, field)
	return sz.Objects, sz.Bytes, true
}

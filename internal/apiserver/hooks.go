package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// installHooks attaches the delete behaviour and subresources some
// resources need beyond their registry strategy. (Admission is not a
// hook: see admission.go.)
func (s *Server) installHooks() {
	s.installReviewHooks()
	for gvr, h := range s.handlers {
		switch {
		case gvr == schema.GroupVersionResource{Version: "v1", Resource: "pods"}:
			s.podHooks(h)
		case gvr == schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}:
			s.namespaceHooks(h)
		case gvr == schema.GroupVersionResource{Version: "v1", Resource: "bindings"}:
			s.bindingHooks(h)
		case gvr == schema.GroupVersionResource{Version: "v1", Resource: "componentstatuses"}:
			s.componentStatusHooks(h)
		case gvr == schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}:
			s.serviceAccountHooks(h)
		}
		if h.res.HasSubresource("scale") {
			if h.hooks.subresources == nil {
				h.hooks.subresources = map[string]subresourceHandler{}
			}
			h.hooks.subresources["scale"] = (*Server).serveScale
		}
	}
}

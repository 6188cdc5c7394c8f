package apiserver

import (
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// namespaceHooks: deleting a namespace marks it Terminating while its spec
// finalizers stand; the namespace controller empties it and calls finalize,
// after which it goes (upstream's namespace lifecycle; its admission half,
// no creates in a terminating namespace, is admission/namespacelifecycle).
func (s *Server) namespaceHooks(h *resourceHandler) {
	h.hooks.keepOnDelete = func(obj runtime.Object) bool {
		return len(obj.(*corev1.Namespace).Spec.Finalizers) > 0
	}
	h.hooks.markedForDeletion = func(obj runtime.Object) {
		obj.(*corev1.Namespace).Status.Phase = corev1.NamespaceTerminating
	}
	h.hooks.subresources = map[string]subresourceHandler{"finalize": (*Server).finalizeNamespace}
}

func (s *Server) finalizeNamespace(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	obj, ok := s.subresourceBody(w, r, h, info, request.VerbUpdate, corev1.SchemeGroupVersion.WithKind("Namespace"), &corev1.Namespace{})
	if !ok {
		return
	}
	ctx := r.Context()
	finalizers := obj.(*corev1.Namespace).Spec.Finalizers
	opts := writeOptionsFrom(r)
	out, err := h.systemUpdate(ctx, "", info.Name, func(old runtime.Object) (runtime.Object, error) {
		ns := old.DeepCopyObject().(*corev1.Namespace)
		ns.Spec.Finalizers = finalizers
		attrs := h.attributes(ctx, admission.Update, "", info.Name, "finalize", ns, old, opts)
		if err := s.admission.Admit(ctx, attrs); err != nil {
			return nil, err
		}
		if err := s.admission.Validate(ctx, attrs); err != nil {
			return nil, err
		}
		return ns, nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	h.respond(w, r, http.StatusOK, out)
}

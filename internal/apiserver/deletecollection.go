package apiserver

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/cache"
)

// deleteCollection deletes every object matching the list options, one by
// one with the same semantics as DELETE (grace periods, finalizers), and
// answers with the list of what it deleted or marked, as upstream.
func (h *resourceHandler) deleteCollection(w http.ResponseWriter, r *http.Request, ns string) {
	lopts, label, field, err := h.listOptions(r, ns, false)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	data, err := readBody(r)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	dopts, err := h.s.decodeDeleteOptions(r, data)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	type target struct{ ns, name string }
	var targets []target
	_, err = h.cache.List(r.Context(), cache.ListOptions{
		ResourceVersion: lopts.ResourceVersion, ResourceVersionMatch: lopts.ResourceVersionMatch,
		Namespace: ns, Label: label, Field: field,
	}, func(obj runtime.Object) error {
		m, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		targets = append(targets, target{m.GetNamespace(), m.GetName()})
		return nil
	})
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	var done []runtime.Object
	for _, t := range targets {
		if err := r.Context().Err(); err != nil {
			h.s.writeError(w, r, err)
			return
		}
		out, _, err := h.deleteObject(r.Context(), t.ns, t.name, dopts.DeepCopy(), true)
		if apierrors.IsNotFound(err) {
			continue // deleted by someone else meanwhile
		}
		if err != nil {
			h.s.writeError(w, r, err)
			return
		}
		done = append(done, out)
	}
	choice, ok := h.s.negotiateOutput(r, false)
	if !ok {
		choice = mediaChoice{info: h.s.codecs.json}
	}
	list, err := h.listObject(mediaChoice{info: choice.info}, metav1.ListMeta{}, done)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	h.s.writeObject(w, r, http.StatusOK, choice, list)
}

package apiserver

import (
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// scaleOf is obj's autoscaling/v1 Scale, through the registry's accessor
// (the registry knows where each Kind keeps its replicas).
func scaleOf(h *resourceHandler, obj runtime.Object) *autoscalingv1.Scale {
	sc := h.res.Scale.Scale(obj)
	sc.TypeMeta = metav1.TypeMeta{Kind: scaleGVK.Kind, APIVersion: scaleGVK.GroupVersion().String()}
	return sc
}

// serveScale serves get, update and patch of <workload>/scale.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	if h.res.Scale == nil {
		s.writeError(w, r, apierrors.NewNotFound(h.objects.gr, info.Name))
		return
	}
	ctx := r.Context()
	ns := info.Namespace
	switch info.Verb {
	case request.VerbGet:
		obj, _, err := h.objects.get(ctx, ns, info.Name)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeScale(w, r, scaleOf(h, obj))
	case request.VerbUpdate, request.VerbPatch:
		data, err := readBody(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		var desired *autoscalingv1.Scale
		if info.Verb == request.VerbUpdate {
			obj, err := s.decodeObject(w, r, data, scaleGVK, &autoscalingv1.Scale{})
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			desired = obj.(*autoscalingv1.Scale)
			if desired.Name != info.Name {
				s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", desired.Name, info.Name)))
				return
			}
		}
		opts := writeOptionsFrom(r)
		// Admission sees the Scale, as upstream's scale REST shows it;
		// the write of the main object is not admitted again.
		admitted := opts
		admitted.admitted = true
		out, err := h.guaranteedUpdate(ctx, ns, info.Name, "", admitted, func(old runtime.Object) (runtime.Object, error) {
			cur := scaleOf(h, old)
			want := desired
			if want == nil {
				patched, err := s.patchGeneric(r, cur, data)
				if err != nil {
					return nil, err
				}
				want = patched.(*autoscalingv1.Scale)
			}
			if want.ResourceVersion != "" && want.ResourceVersion != cur.ResourceVersion {
				return nil, conflictError(h.objects.gr, info.Name)
			}
			want = want.DeepCopy() // admission may change it; a retry starts again from desired
			attrs := h.attributes(ctx, admission.Update, ns, info.Name, "scale", want, cur, opts)
			attrs.Kind = scaleGVK
			if err := s.admission.Admit(ctx, attrs); err != nil {
				return nil, err
			}
			if want.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), info.Name, field.ErrorList{
					field.Invalid(field.NewPath("spec", "replicas"), want.Spec.Replicas, "must be greater than or equal to 0")})
			}
			if err := s.admission.Validate(ctx, attrs); err != nil {
				return nil, err
			}
			obj := old.DeepCopyObject()
			h.res.Scale.SetReplicas(obj, want.Spec.Replicas)
			obj.(metav1.Object).SetResourceVersion("")
			return obj, nil
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeScale(w, r, scaleOf(h, out))
	default:
		s.writeError(w, r, methodNotSupported(h, info.Verb))
	}
}

func (s *Server) writeScale(w http.ResponseWriter, r *http.Request, sc *autoscalingv1.Scale) {
	choice, ok := s.negotiateOutput(r, false)
	if !ok {
		choice = mediaChoice{info: s.codecs.json}
	}
	s.writeObject(w, r, http.StatusOK, choice, sc)
}

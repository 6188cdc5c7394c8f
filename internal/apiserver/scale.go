package apiserver

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// replicasOf reads and writes the replica count of the scalable workloads.
func replicasOf(obj runtime.Object) (spec *int32, status int32, selector *metav1.LabelSelector, ok bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	case *appsv1.ReplicaSet:
		return o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	case *appsv1.StatefulSet:
		return o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector, true
	}
	return nil, 0, nil, false
}

func setReplicas(obj runtime.Object, n int32) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		o.Spec.Replicas = &n
	case *appsv1.ReplicaSet:
		o.Spec.Replicas = &n
	case *appsv1.StatefulSet:
		o.Spec.Replicas = &n
	}
}

func scaleFor(obj runtime.Object) (*autoscalingv1.Scale, error) {
	spec, status, selector, ok := replicasOf(obj)
	if !ok {
		return nil, fmt.Errorf("%T has no scale subresource", obj)
	}
	m := obj.(metav1.Object)
	sc := &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp()},
		Status: autoscalingv1.ScaleStatus{Replicas: status},
	}
	if spec != nil {
		sc.Spec.Replicas = *spec
	}
	if sel, err := metav1.LabelSelectorAsSelector(selector); err == nil {
		sc.Status.Selector = sel.String()
	}
	return sc, nil
}

// serveScale serves get, update and patch of <workload>/scale.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	ctx := r.Context()
	ns := info.Namespace
	switch info.Verb {
	case request.VerbGet:
		obj, _, err := h.objects.get(ctx, ns, info.Name)
		if err == nil {
			var sc *autoscalingv1.Scale
			if sc, err = scaleFor(obj); err == nil {
				s.writeScale(w, r, sc)
				return
			}
		}
		s.writeError(w, r, err)
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
		}
		out, err := h.guaranteedUpdate(ctx, ns, info.Name, "", writeOptionsFrom(r), func(old runtime.Object) (runtime.Object, error) {
			cur, err := scaleFor(old)
			if err != nil {
				return nil, err
			}
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
			if want.Spec.Replicas < 0 {
				return nil, apierrors.NewBadRequest("spec.replicas: must be greater than or equal to 0")
			}
			obj := old.DeepCopyObject()
			setReplicas(obj, want.Spec.Replicas)
			obj.(metav1.Object).SetResourceVersion("")
			return obj, nil
		})
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		sc, err := scaleFor(out)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		s.writeScale(w, r, sc)
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

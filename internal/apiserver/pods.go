package apiserver

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// podHooks: graceful deletion, and the binding and eviction subresources.
func (s *Server) podHooks(h *resourceHandler) {
	h.hooks.gracePeriod = podGracePeriod
	h.hooks.subresources = map[string]subresourceHandler{
		"binding":  (*Server).bindPod,
		"eviction": (*Server).evictPod,
	}
}

// podGracePeriod: a pod that may be running on a node gets its grace period
// (the kubelet, or a force delete, removes it); one that never ran or has
// finished goes at once.
func podGracePeriod(obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	if opts.GracePeriodSeconds != nil {
		return *opts.GracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return corev1.DefaultTerminationGracePeriodSeconds
}

func (s *Server) bindPod(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	obj, ok := s.subresourceBody(w, r, h, info, request.VerbCreate, bindingGVK, &corev1.Binding{})
	if !ok {
		return
	}
	s.bind(w, r, h, h, info.Namespace, info.Name, "binding", obj.(*corev1.Binding))
}

var bindingGVK = corev1.SchemeGroupVersion.WithKind("Binding")

// bindingHooks: the legacy top-level bindings resource, whose one verb is
// pods/binding with the pod named in the body, as upstream's
// LegacyBindingREST.
func (s *Server) bindingHooks(h *resourceHandler) {
	h.hooks.serve = func(s *Server, w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
		if info.Name != "" {
			// Upstream serves no item paths under bindings.
			s.writeError(w, r, errNoRoute())
			return
		}
		obj, ok := s.subresourceBody(w, r, h, info, request.VerbCreate, bindingGVK, &corev1.Binding{})
		if !ok {
			return
		}
		binding := obj.(*corev1.Binding)
		if binding.Name == "" {
			s.writeError(w, r, apierrors.NewInvalid(bindingGVK.GroupKind(), "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}))
			return
		}
		pods, ok := s.handlers[corev1.SchemeGroupVersion.WithResource("pods")]
		if !ok {
			s.writeError(w, r, errNoRoute())
			return
		}
		s.bind(w, r, h, pods, info.Namespace, binding.Name, "", binding)
	}
}

// bind assigns pod ns/name to the node binding targets. Admission sees the
// request as made: h and subresource are pods and "binding", or bindings
// and "" for the legacy form; pods is the pods' handler.
func (s *Server) bind(w http.ResponseWriter, r *http.Request, h, pods *resourceHandler, ns, name, subresource string, binding *corev1.Binding) {
	ctx := r.Context()
	attrs := h.attributes(ctx, admission.Create, ns, name, subresource, binding, nil, writeOptionsFrom(r))
	attrs.Kind = bindingGVK
	if err := s.admission.Admit(ctx, attrs); err != nil {
		s.writeError(w, r, err)
		return
	}
	if binding.Name != "" && binding.Name != name {
		s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("name in URL (%s) and in the Binding (%s) differ", name, binding.Name)))
		return
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		s.writeError(w, r, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, name, field.ErrorList{
			field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node", "<empty>"})}))
		return
	}
	if binding.Target.Name == "" {
		s.writeError(w, r, apierrors.NewBadRequest("a Binding must name a target node"))
		return
	}
	if err := s.admission.Validate(ctx, attrs); err != nil {
		s.writeError(w, r, err)
		return
	}
	_, err := pods.systemUpdate(ctx, ns, name, func(old runtime.Object) (runtime.Object, error) {
		pod := old.DeepCopyObject().(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(pods.objects.gr, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(pods.objects.gr, pod.Name, fmt.Errorf("pod %s is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if binding.UID != "" && binding.UID != pod.UID {
			return nil, apierrors.NewConflict(pods.objects.gr, pod.Name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
		}
		pod.Spec.NodeName = binding.Target.Name
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(s.clock.Now())})
		return pod, nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStatusSuccess(w, r, http.StatusCreated)
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

func (s *Server) writeStatusSuccess(w http.ResponseWriter, r *http.Request, code int) {
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
	choice, ok := s.negotiateOutput(r, false)
	if !ok {
		choice = mediaChoice{info: s.codecs.json}
	}
	s.writeObject(w, r, code, choice, st)
}

// evictPod deletes a pod unless that would violate a PodDisruptionBudget
// covering it, in which case the client gets 429 and retries later.
func (s *Server) evictPod(w http.ResponseWriter, r *http.Request, h *resourceHandler, info *request.RequestInfo) {
	obj, ok := s.subresourceBody(w, r, h, info, request.VerbCreate, policyv1.SchemeGroupVersion.WithKind("Eviction"), &policyv1.Eviction{})
	if !ok {
		return
	}
	ctx := r.Context()
	attrs := h.attributes(ctx, admission.Create, info.Namespace, info.Name, "eviction", obj, nil, writeOptionsFrom(r))
	attrs.Kind = policyv1.SchemeGroupVersion.WithKind("Eviction")
	if err := s.admission.Admit(ctx, attrs); err != nil {
		s.writeError(w, r, err)
		return
	}
	eviction := obj.(*policyv1.Eviction)
	if eviction.Name != info.Name {
		s.writeError(w, r, apierrors.NewBadRequest("name in URL does not match name in Eviction object"))
		return
	}
	if err := s.admission.Validate(ctx, attrs); err != nil {
		s.writeError(w, r, err)
		return
	}
	podObj, _, err := h.objects.get(ctx, info.Namespace, info.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	pod := podObj.(*corev1.Pod)
	// Terminal or unscheduled pods are not covered by budgets.
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.Spec.NodeName != "" && pod.DeletionTimestamp == nil {
		if err := s.takeDisruption(ctx, pod); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	opts := eviction.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	if _, _, err := h.deleteObject(ctx, info.Namespace, info.Name, opts, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeStatusSuccess(w, r, http.StatusCreated)
}

// takeDisruption checks the budgets covering pod and takes one allowed
// disruption from each, compare-and-swap on the budget, as upstream.
func (s *Server) takeDisruption(ctx context.Context, pod *corev1.Pod) error {
	pdbs, ok := s.handlers[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]
	if !ok {
		return nil
	}
	kvs, _, err := pdbs.objects.store.List(ctx, pdbs.objects.namespacePrefix(pod.Namespace))
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		obj, err := pdbs.objects.decode(kv)
		if err != nil {
			return err
		}
		pdb := obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return tooManyRequests(fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
		}
		if pdb.Status.DisruptionsAllowed < 1 {
			return tooManyRequests(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
		}
		pdb.Status.DisruptionsAllowed--
		if pdb.Status.DisruptedPods == nil {
			pdb.Status.DisruptedPods = map[string]metav1.Time{}
		}
		pdb.Status.DisruptedPods[pod.Name] = metav1.NewTime(s.clock.Now())
		if _, err := pdbs.objects.update(ctx, pdb.Namespace, pdb.Name, pdb, kv.ModRevision); err != nil {
			if apierrors.IsConflict(err) {
				return tooManyRequests(fmt.Sprintf("The disruption budget %s changed while evicting; retry.", pdb.Name))
			}
			return err
		}
	}
	return nil
}

// tooManyRequests is upstream's eviction refusal: a fixed message, the
// reason in a DisruptionBudget cause, and no Retry-After. client-go retries
// a 429 that carries Retry-After inside the call (up to ten times), which
// would stall kubectl drain, whose own loop does the retrying.
func tooManyRequests(cause string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: cause})
	return err
}

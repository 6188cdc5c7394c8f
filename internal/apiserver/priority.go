package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/myriad-k8s/myriad/internal/registry"
)

// systemPriorityClassDescriptions are upstream's descriptions of the
// classes its bootstrap creates (values in registry.SystemPriorityClasses).
var systemPriorityClassDescriptions = map[string]string{
	"system-node-critical":    "Used for system critical pods that must not be moved from their current node.",
	"system-cluster-critical": "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
}

var priorityClassesGVR = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")

// admitPodPriority is the Priority admission plugin's lookup: a pod naming
// a PriorityClass gets that class's value and preemption policy, and a pod
// naming one that does not exist is refused, as upstream refuses it. (The
// registry's defaulting already resolved the two system classes and the
// empty name.)
func (s *Server) admitPodPriority(ctx context.Context, obj runtime.Object, _ bool) error {
	pod := obj.(*corev1.Pod)
	name := pod.Spec.PriorityClassName
	if name == "" {
		return nil
	}
	pcs, ok := s.handlers[priorityClassesGVR]
	if !ok {
		return nil
	}
	got, _, err := pcs.objects.get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		if isSystemPriorityClass(name) {
			return nil
		}
		return podForbidden(pod, fmt.Sprintf("no PriorityClass with name %s was found", name))
	}
	if err != nil {
		return err
	}
	pc := got.(*schedulingv1.PriorityClass)
	if pod.Spec.Priority != nil && *pod.Spec.Priority != pc.Value && !isSystemPriorityClass(name) {
		return podForbidden(pod, fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, pc.Value))
	}
	pod.Spec.Priority = &pc.Value
	if pc.PreemptionPolicy != nil {
		policy := *pc.PreemptionPolicy
		pod.Spec.PreemptionPolicy = &policy
	}
	return nil
}

func isSystemPriorityClass(name string) bool {
	_, ok := registry.SystemPriorityClasses()[name]
	return ok
}

func podForbidden(pod *corev1.Pod, msg string) error {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewForbidden(corev1.Resource("pods"), name, fmt.Errorf("%s", msg))
}

// bootstrapPriorityClasses creates the system classes if missing.
func (s *Server) bootstrapPriorityClasses(ctx context.Context) error {
	pcs, ok := s.handlers[priorityClassesGVR]
	if !ok {
		return nil
	}
	for name, value := range registry.SystemPriorityClasses() {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, Description: systemPriorityClassDescriptions[name]}
		pc.SetGroupVersionKind(schedulingv1.SchemeGroupVersion.WithKind("PriorityClass"))
		_, err := pcs.createObject(ctx, pc, "", writeOptions{fieldManager: "myriad-apiserver"})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}

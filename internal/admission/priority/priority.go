package priority

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/registry"
)

// ClassGetter reads a PriorityClass by name; a class that does not exist
// is an error for which apierrors.IsNotFound holds.
type ClassGetter func(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)

// Plugin resolves pods' PriorityClass names on create.
type Plugin struct {
	admission.Handler
	get ClassGetter
}

var _ admission.MutationInterface = (*Plugin)(nil)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// New is the plugin reading classes through get. It reads on every create
// of a pod that names a class, so get should be cheap.
func New(get ClassGetter) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), get: get}
}

// Admit sets the priority and preemption policy of a pod being created
// from the PriorityClass it names. A class that does not exist, or an
// explicit priority that differs from the class's value, is 403 as
// upstream (the system classes may be named before they exist, their
// values being fixed).
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Resource != podsResource || a.Subresource != "" {
		return nil
	}
	pod := a.Object.(*corev1.Pod)
	name := pod.Spec.PriorityClassName
	if name == "" {
		return nil
	}
	pc, err := p.get(ctx, name)
	if apierrors.IsNotFound(err) {
		if isSystemPriorityClass(name) {
			return nil
		}
		return podForbidden(pod, fmt.Sprintf("no PriorityClass with name %s was found", name))
	}
	if err != nil {
		return err
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != pc.Value && !isSystemPriorityClass(name) {
		return podForbidden(pod, fmt.Sprintf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, pc.Value))
	}
	value := pc.Value
	pod.Spec.Priority = &value
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

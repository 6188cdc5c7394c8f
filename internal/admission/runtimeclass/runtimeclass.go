package runtimeclass

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// ClassGetter reads a RuntimeClass by name; a class that does not exist is
// an error for which apierrors.IsNotFound holds. The class may be shared:
// the plugin only reads it.
type ClassGetter func(ctx context.Context, name string) (*nodev1.RuntimeClass, error)

// Plugin applies pods' RuntimeClasses on create.
type Plugin struct {
	admission.Handler
	get ClassGetter
}

var (
	_ admission.MutationInterface   = (*Plugin)(nil)
	_ admission.ValidationInterface = (*Plugin)(nil)
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// New is the plugin reading classes through get, once per create of a pod
// that names a class (twice: admit and validate), so get should be cheap.
func New(get ClassGetter) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create), get: get}
}

// Admit sets the pod's overhead to its class's and merges the class's
// node selector and tolerations into the pod's. A pod whose overhead or
// node selector already says otherwise is 403, as upstream.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	pod, rc, err := p.objects(ctx, a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		selector := pod.Spec.NodeSelector
		if selector == nil && len(s.NodeSelector) > 0 {
			selector = make(map[string]string, len(s.NodeSelector))
		}
		for k, v := range s.NodeSelector {
			if pv, ok := selector[k]; ok && pv != v {
				return forbidden(pod, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
			selector[k] = v
		}
		pod.Spec.NodeSelector = selector
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate refuses a pod whose overhead is not its class's: set without a
// class that defines one, or changed after Admit.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	pod, rc, err := p.objects(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidden(pod, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if pod.Spec.Overhead != nil {
		return forbidden(pod, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// objects returns the pod a creates and the RuntimeClass it names: nil,
// nil for anything but a pod, and a nil class for a pod naming none.
func (p *Plugin) objects(ctx context.Context, a *admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	if a.Resource != podsResource || a.Subresource != "" {
		return nil, nil, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	rc, err := p.get(ctx, *pod.Spec.RuntimeClassName)
	if apierrors.IsNotFound(err) {
		return nil, nil, forbidden(pod, fmt.Sprintf("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName))
	}
	if err != nil {
		return nil, nil, err
	}
	return pod, rc, nil
}

func forbidden(pod *corev1.Pod, msg string) error {
	name := pod.Name
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewForbidden(corev1.Resource("pods"), name, fmt.Errorf("%s", msg))
}

// mergeTolerations is upstream's tolerations.MergeTolerations: the pod's
// tolerations then the class's, leaving out each one another already
// covers (the first of equal ones is kept).
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if covers(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && covers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// covers reports whether ss tolerates everything t does (upstream's
// isSuperset).
func covers(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(t, ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}

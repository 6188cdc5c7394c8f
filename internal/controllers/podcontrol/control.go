package podcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/myriad-k8s/myriad/internal/controllers/controllerctx"
)

// ControllerRef is the ownerReference a controller puts on what it creates
// or adopts: controller=true and blockOwnerDeletion=true, as upstream's
// metav1.NewControllerRef.
func ControllerRef(owner metav1.Object, gvk schema.GroupVersionKind) *metav1.OwnerReference {
	return metav1.NewControllerRef(owner, gvk)
}

// PodFromTemplate builds the pod a controller creates from template: the
// template's labels, annotations, finalizers and spec, a generateName of
// "<owner>-" and the controller reference, as upstream's GetPodFromTemplate.
func PodFromTemplate(template *corev1.PodTemplateSpec, owner metav1.Object, ref *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    owner.GetNamespace(),
			GenerateName: podsPrefix(owner.GetName()),
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string(nil), template.Finalizers...),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if ref != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *ref)
	}
	return pod
}

// podsPrefix is "<name>-" unless that is not a valid name prefix.
func podsPrefix(name string) string {
	prefix := name + "-"
	if len(validation.IsDNS1123Subdomain(prefix+"a")) != 0 {
		return name
	}
	return prefix
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CreatePod creates pod, recording an event on owner either way.
func CreatePod(ctx context.Context, client kubernetes.Interface, rec record.EventRecorder, owner ownerObject, pod *corev1.Pod) (*corev1.Pod, error) {
	created, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// A terminating namespace refuses new pods; that is not the
		// controller's failure to report.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			rec.Eventf(owner, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		}
		return nil, fmt.Errorf("creating pod for %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	rec.Eventf(owner, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return created, nil
}

// DeletePod deletes the pod, recording an event on owner. NotFound is
// returned as is, so callers can treat it as done.
func DeletePod(ctx context.Context, client kubernetes.Interface, rec record.EventRecorder, owner ownerObject, namespace, name string) error {
	err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return err
		}
		rec.Eventf(owner, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s/%s: %w", namespace, name, err)
	}
	rec.Eventf(owner, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", name)
	return nil
}

// DeletePods deletes pods in parallel, as DeletePod. The caller expected
// their deletions in exp under key; a deletion that fails is observed at
// once, as no watch event will report it. NotFound counts as deleted.
func DeletePods(ctx context.Context, client kubernetes.Interface, rec record.EventRecorder, owner ownerObject, pods []*corev1.Pod, exp *Expectations, key string) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, p := range pods {
		wg.Go(func() {
			err := DeletePod(ctx, client, rec, owner, p.Namespace, p.Name)
			if err == nil {
				return
			}
			exp.DeletionObserved(key, p.Namespace+"/"+p.Name)
			if !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ownerObject is the controller object events are recorded on.
type ownerObject interface {
	metav1.Object
	runtime.Object
}

// Recorder returns an event recorder for component, or one that drops
// events when c has no broadcaster (unit tests).
func Recorder(c *controllerctx.Context, component string) record.EventRecorder {
	if c.Events == nil {
		return &record.FakeRecorder{}
	}
	return c.Events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

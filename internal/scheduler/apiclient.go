package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/events"

	"github.com/myriad-k8s/myriad/internal/scheduler/core"
)

// apiBinder binds through the pods/binding subresource.
type apiBinder struct{ client kubernetes.Interface }

var _ core.Binder = apiBinder{}

func (b apiBinder) Bind(ctx context.Context, pod *v1.Pod, node string) error {
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := b.client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("bind %s/%s to %s: %w", pod.Namespace, pod.Name, node, err)
	}
	return nil
}

// apiReporter publishes events, conditions and preemptions.
type apiReporter struct {
	client   kubernetes.Interface
	recorder events.EventRecorder
	// Condition patches run off the scheduling loop, at most cap(slots)
	// at a time; wg joins them at shutdown.
	slots chan struct{}
	wg    *sync.WaitGroup
}

var _ core.Reporter = (*apiReporter)(nil)

func newAPIReporter(client kubernetes.Interface, recorder events.EventRecorder) *apiReporter {
	return &apiReporter{client: client, recorder: recorder, slots: make(chan struct{}, 16), wg: &sync.WaitGroup{}}
}

// wait joins the in-flight condition patches.
func (r *apiReporter) wait() { r.wg.Wait() }

func (r *apiReporter) Scheduled(_ context.Context, pod *v1.Pod, node string) {
	r.recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v", pod.Namespace, pod.Name, node)
}

// Unschedulable sets PodScheduled=False/Unschedulable with the message (if
// it changed) and emits FailedScheduling, as upstream's
// handleSchedulingFailure — but the patch runs in the background, so a
// flood of unschedulable pods does not stall the scheduling loop on API
// round trips.
func (r *apiReporter) Unschedulable(ctx context.Context, pod *v1.Pod, message string) {
	r.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", message)
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable && c.Message == message {
			return
		}
	}
	cond := map[string]any{
		"type": v1.PodScheduled, "status": v1.ConditionFalse, "reason": v1.PodReasonUnschedulable,
		"message": message, "lastProbeTime": nil, "lastTransitionTime": metav1.Now(),
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{cond}}})
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case r.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-r.slots }()
		_ = r.patchStatus(ctx, pod, patch)
	}()
}

func (r *apiReporter) patchStatus(ctx context.Context, pod *v1.Pod, patch []byte) error {
	_, err := r.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// Preempt nominates node for pod and deletes the victims (graceful, with
// a UID precondition), emitting "Preempted" on each.
func (r *apiReporter) Preempt(ctx context.Context, pod *v1.Pod, node string, victims []*v1.Pod) error {
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": node}})
	if err := r.patchStatus(ctx, pod, patch); err != nil {
		return err
	}
	for _, v := range victims {
		uid := v.UID
		err := r.client.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete victim %s/%s: %w", v.Namespace, v.Name, err)
		}
		r.recorder.Eventf(v, pod, v1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", pod.UID, node)
	}
	return nil
}

// pdbLister adapts the PDB informer's lister.
type pdbLister struct {
	lister policylisters.PodDisruptionBudgetLister
}

func (l pdbLister) PDBs() []*policyv1.PodDisruptionBudget {
	pdbs, err := l.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return pdbs
}

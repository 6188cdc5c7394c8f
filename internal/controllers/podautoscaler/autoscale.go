package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// reconcile is upstream's reconcileAutoscaler: read the target's scale,
// decide the replicas (the bounds first, else the metrics, stabilized and
// rate-limited), rescale, and write status and conditions when they
// changed. An error is returned after the status is written.
func (hc *Controller) reconcile(ctx context.Context, shared *autoscalingv2.HorizontalPodAutoscaler, key string) (retErr error) {
	hpa := shared.DeepCopy()
	original := hpa.Status.DeepCopy()
	now := hc.Clock.Now()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)

	failGetScale := func(err error, wrap string) error {
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedGetScale", err.Error())
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale",
			fmt.Sprintf("the HPA controller was unable to get the target's current scale: %v", err), now)
		hc.writeStatus(ctx, original, hpa)
		return fmt.Errorf("%s: %w", wrap, err)
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return failGetScale(err, "invalid API version in scale target reference")
	}
	mappings, err := hc.mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return failGetScale(err, "unable to determine resource for scale target reference")
	}
	sc, gr, err := hc.getScale(ctx, hpa.Namespace, ref.Name, mappings)
	if err != nil {
		return failGetScale(err, "failed to query scale subresource for "+reference)
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale", now)
	current := sc.Spec.Replicas
	hc.history.recordInitial(key, current, now)

	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	var (
		desired  int32
		reason   string
		statuses []autoscalingv2.MetricStatus
		rescale  = true
	)
	switch {
	case current == 0 && minReplicas != 0:
		// A target scaled to zero by hand is left alone.
		desired, rescale = 0, false
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero", now)
	case current > hpa.Spec.MaxReplicas:
		reason, desired = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas
	case current < minReplicas:
		reason, desired = "Current number of replicas below Spec.MinReplicas", minReplicas
	default:
		proposed, metricName, st, err := hc.replicasForMetrics(ctx, hpa, sc, now)
		statuses = st
		if err != nil && proposed == -1 {
			hc.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false, now)
			hc.writeStatus(ctx, original, hpa)
			hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, err)
		}
		// Some metrics failed but the rest ask for more: scale on them, and
		// still report the failure.
		retErr = err
		if proposed > desired {
			desired = proposed
		}
		switch {
		case desired > current:
			reason = metricName + " above target"
		case desired < current:
			reason = "All metrics below target"
		}
		if hpa.Spec.Behavior == nil {
			desired = hc.normalize(hpa, key, current, desired, minReplicas)
		} else {
			desired = hc.normalizeWithBehavior(hpa, key, current, desired, minReplicas)
		}
		rescale = desired != current
	}

	if rescale {
		sc.Spec.Replicas = desired
		if _, err := hc.scales.Scales(hpa.Namespace).Update(ctx, gr, sc, metav1.UpdateOptions{}); err != nil {
			hc.recorder.Eventf(hpa, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err.Error())
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale",
				fmt.Sprintf("the HPA controller was unable to update the target scale: %v", err), now)
			hc.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false, now)
			hc.writeStatus(ctx, original, hpa)
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale",
			fmt.Sprintf("the HPA controller was able to update the target scale to %d", desired), now)
		hc.recorder.Eventf(hpa, corev1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
		hc.history.storeScaleEvent(hpa.Spec.Behavior, key, current, desired, now)
		hc.Log.Info("rescaled", "hpa", key, "target", reference, "from", current, "to", desired, "reason", reason)
	} else {
		desired = current
	}
	hc.setStatus(hpa, current, desired, statuses, rescale, now)
	if err := hc.writeStatus(ctx, original, hpa); err != nil {
		return err
	}
	return retErr
}

// getScale reads the scale subresource through the first mapping that
// serves it, reporting the first mapping's error if none does.
func (hc *Controller) getScale(ctx context.Context, namespace, name string, mappings []*meta.RESTMapping) (*autoscalingv1.Scale, schema.GroupResource, error) {
	if len(mappings) == 0 {
		return nil, schema.GroupResource{}, errors.New("unrecognized resource")
	}
	var first error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := hc.scales.Scales(namespace).Get(ctx, gr, name, metav1.GetOptions{})
		if err == nil {
			return s, gr, nil
		}
		if i == 0 {
			first = err
		}
	}
	return nil, schema.GroupResource{}, first
}

// setStatus replaces the status, keeping conditions and lastScaleTime
// (set now on a rescale).
func (hc *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, statuses []autoscalingv2.MetricStatus, rescaled bool, now time.Time) {
	st := autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: current,
		DesiredReplicas: desired,
		LastScaleTime:   hpa.Status.LastScaleTime,
		CurrentMetrics:  statuses,
		Conditions:      hpa.Status.Conditions,
	}
	if rescaled {
		t := metav1.NewTime(now)
		st.LastScaleTime = &t
	}
	hpa.Status = st
}

// writeStatus writes hpa's status through the status subresource unless it
// equals original.
func (hc *Controller) writeStatus(ctx context.Context, original *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	// Upstream v1.34 leaves observedGeneration unset (a later release sets
	// it behind a gate); Myriad bumps generation on spec changes, so the
	// field tells a client which spec the status reflects.
	if hpa.Generation > 0 {
		g := hpa.Generation
		hpa.Status.ObservedGeneration = &g
	}
	if equality.Semantic.DeepEqual(original, &hpa.Status) {
		return nil
	}
	if _, err := hc.Client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	return nil
}

// setCondition sets the condition of type t, moving its transition time
// only when its status changes.
func setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	conds := hpa.Status.Conditions
	i := 0
	for ; i < len(conds) && conds[i].Type != t; i++ {
	}
	if i == len(conds) {
		conds = append(conds, autoscalingv2.HorizontalPodAutoscalerCondition{Type: t})
	}
	c := &conds[i]
	if c.Status != status {
		c.LastTransitionTime = metav1.NewTime(now)
	}
	c.Status, c.Reason, c.Message = status, reason, message
	hpa.Status.Conditions = conds
}

// parseSelector checks the scale's selector and that no other HPA selects
// the same pods, as upstream's validateAndParseSelector; a failure sets
// ScalingActive False and emits an event.
func (hc *Controller) parseSelector(hpa *autoscalingv2.HorizontalPodAutoscaler, selector string, now time.Time) (labels.Selector, error) {
	if selector == "" {
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "SelectorRequired", "selector is required")
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector", now)
		return nil, errors.New("selector is required")
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "InvalidSelector", msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", msg, now)
		return nil, errors.New(msg)
	}
	key := hpa.Namespace + "/" + hpa.Name
	hc.selectors.Lock()
	hc.selectors.m[key] = sel
	others := map[string]labels.Selector{}
	for k, s := range hc.selectors.m {
		if k != key && strings.HasPrefix(k, hpa.Namespace+"/") {
			others[k] = s
		}
	}
	hc.selectors.Unlock()
	pods, err := hc.pods.Pods(hpa.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	selecting := map[string]bool{}
	for _, p := range pods {
		set := labels.Set(p.Labels)
		for k, s := range others {
			if s.Matches(set) {
				selecting[k] = true
			}
		}
	}
	if len(selecting) > 0 {
		names := []string{key}
		for k := range selecting {
			names = append(names, k)
		}
		sort.Strings(names)
		msg := fmt.Sprintf("pods by selector %v are controlled by multiple HPAs: %v", selector, names)
		hc.recorder.Event(hpa, corev1.EventTypeWarning, "AmbiguousSelector", msg)
		setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", msg, now)
		return nil, errors.New(msg)
	}
	return sel, nil
}

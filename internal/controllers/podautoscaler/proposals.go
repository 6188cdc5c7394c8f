package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// replicasForMetrics is the highest proposal over the HPA's metrics, the
// metric it came from and every metric's status. Proposal -1 with an error
// means no proposal can be acted on: every metric failed, or some failed
// and the rest would scale down (a failed one might have asked for more);
// ScalingActive then carries the first failure. A proposal with an error
// means some metrics failed but the others scale up.
func (hc *Controller) replicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale, now time.Time) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := hc.parseSelector(hpa, sc.Status.Selector, now)
	if err != nil {
		return -1, "", nil, err
	}
	specReplicas, statusReplicas := sc.Spec.Replicas, sc.Status.Replicas
	statuses := make([]autoscalingv2.MetricStatus, len(hpa.Spec.Metrics))
	var (
		replicas     int32
		metric       string
		invalid      int
		firstErr     error
		firstInvalid autoscalingv2.HorizontalPodAutoscalerCondition
	)
	for i, spec := range hpa.Spec.Metrics {
		n, name, cond, err := hc.replicasForMetric(ctx, hpa, spec, specReplicas, statusReplicas, selector, &statuses[i], now)
		if err != nil {
			if invalid == 0 {
				firstInvalid, firstErr = cond, err
			}
			invalid++
			continue
		}
		if replicas == 0 || n > replicas {
			replicas, metric = n, name
		}
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalid, len(hpa.Spec.Metrics), firstErr)
	}
	if invalid >= len(hpa.Spec.Metrics) || (invalid > 0 && replicas < specReplicas) {
		setCondition(hpa, firstInvalid.Type, firstInvalid.Status, firstInvalid.Reason, firstInvalid.Message, now)
		return -1, "", statuses, firstErr
	}
	setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound",
		"the HPA was able to successfully calculate a replica count from "+metric, now)
	return replicas, metric, statuses, firstErr
}

// tolerancesFor is the controller's tolerance, overridden per direction
// by the behavior's (HPAConfigurableTolerance).
func (hc *Controller) tolerancesFor(hpa *autoscalingv2.HorizontalPodAutoscaler) tolerances {
	t := tolerances{hc.opts.Tolerance, hc.opts.Tolerance}
	if b := hpa.Spec.Behavior; b != nil {
		if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
			t.scaleDown = b.ScaleDown.Tolerance.AsApproximateFloat64()
		}
		if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
			t.scaleUp = b.ScaleUp.Tolerance.AsApproximateFloat64()
		}
	}
	return t
}

// unable is the ScalingActive condition of a metric that could not be
// computed, after emitting its event (reason FailedGet<Kind>Metric).
func (hc *Controller) unable(hpa *autoscalingv2.HorizontalPodAutoscaler, reason string, err error) autoscalingv2.HorizontalPodAutoscalerCondition {
	hc.recorder.Event(hpa, corev1.EventTypeWarning, reason, err.Error())
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScalingActive,
		Status:  corev1.ConditionFalse,
		Reason:  reason,
		Message: fmt.Sprintf("the HPA was unable to compute the replica count: %v", err),
	}
}

func milli(v int64) *resource.Quantity { return resource.NewMilliQuantity(v, resource.DecimalSI) }

// replicasForMetric is one metric's proposal and the name it goes by in
// events and conditions; it fills status.
func (hc *Controller) replicasForMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, specReplicas, statusReplicas int32, selector labels.Selector, status *autoscalingv2.MetricStatus, _ time.Time) (int32, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	tol := hc.tolerancesFor(hpa)
	ns := hpa.Namespace
	none := autoscalingv2.HorizontalPodAutoscalerCondition{}
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		o := spec.Object
		msel, err := metav1.LabelSelectorAsSelector(o.Metric.Selector)
		if err != nil {
			return 0, "", hc.unable(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)
		}
		switch {
		case o.Target.Type == autoscalingv2.ValueMetricType && o.Target.Value != nil:
			n, usage, _, err := hc.calc.objectReplicas(ctx, specReplicas, o.Target.Value.MilliValue(), o.Metric.Name, tol, ns, &o.DescribedObject, selector, msel)
			if err != nil {
				return 0, "", hc.unable(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)
			}
			*status = autoscalingv2.MetricStatus{Type: spec.Type, Object: &autoscalingv2.ObjectMetricStatus{
				DescribedObject: o.DescribedObject, Metric: o.Metric, Current: autoscalingv2.MetricValueStatus{Value: milli(usage)}}}
			return n, fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name), none, nil
		case o.Target.Type == autoscalingv2.AverageValueMetricType && o.Target.AverageValue != nil:
			n, usage, _, err := hc.calc.objectPerPodReplicas(ctx, statusReplicas, o.Target.AverageValue.MilliValue(), o.Metric.Name, tol, ns, &o.DescribedObject, msel)
			if err != nil {
				err = fmt.Errorf("failed to get %s object metric: %w", o.Metric.Name, err)
				return 0, "", hc.unable(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)
			}
			*status = autoscalingv2.MetricStatus{Type: spec.Type, Object: &autoscalingv2.ObjectMetricStatus{
				Metric: o.Metric, Current: autoscalingv2.MetricValueStatus{AverageValue: milli(usage)}}}
			return n, fmt.Sprintf("external metric %s(%+v)", o.Metric.Name, o.Metric.Selector), none, nil
		}
		err = errors.New("invalid object metric source: neither a value target nor an average value target was set")
		return 0, "", hc.unable(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)

	case autoscalingv2.PodsMetricSourceType:
		p := spec.Pods
		msel, err := metav1.LabelSelectorAsSelector(p.Metric.Selector)
		if err != nil {
			return 0, "", hc.unable(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
		}
		if p.Target.AverageValue == nil {
			err := errors.New("invalid pods metric source: an average value target was not set")
			return 0, "", hc.unable(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
		}
		n, usage, _, err := hc.calc.podsReplicas(ctx, specReplicas, p.Target.AverageValue.MilliValue(), p.Metric.Name, tol, ns, selector, msel)
		if err != nil {
			return 0, "", hc.unable(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Pods: &autoscalingv2.PodsMetricStatus{
			Metric: p.Metric, Current: autoscalingv2.MetricValueStatus{AverageValue: milli(usage)}}}
		return n, "pods metric " + p.Metric.Name, none, nil

	case autoscalingv2.ResourceMetricSourceType:
		r := spec.Resource
		n, cur, name, err := hc.resourceProposal(ctx, specReplicas, r.Target, r.Name, ns, "", selector, tol, spec.Type)
		if err != nil {
			return 0, "", hc.unable(hpa, "FailedGetResourceMetric", err), fmt.Errorf("failed to get %s resource metric value: %w", r.Name, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: r.Name, Current: *cur}}
		return n, name, none, nil

	case autoscalingv2.ContainerResourceMetricSourceType:
		r := spec.ContainerResource
		n, cur, name, err := hc.resourceProposal(ctx, specReplicas, r.Target, r.Name, ns, r.Container, selector, tol, spec.Type)
		if err != nil {
			return 0, "", hc.unable(hpa, "FailedGetContainerResourceMetric", err), fmt.Errorf("failed to get %s container metric value: %w", r.Container, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
			Name: r.Name, Container: r.Container, Current: *cur}}
		return n, name, none, nil

	case autoscalingv2.ExternalMetricSourceType:
		e := spec.External
		name := fmt.Sprintf("external metric %s(%+v)", e.Metric.Name, e.Metric.Selector)
		switch {
		case e.Target.AverageValue != nil:
			n, usage, _, err := hc.calc.externalPerPodReplicas(ctx, statusReplicas, e.Target.AverageValue.MilliValue(), e.Metric.Name, tol, ns, e.Metric.Selector)
			if err != nil {
				return 0, "", hc.unable(hpa, "FailedGetExternalMetric", err), fmt.Errorf("failed to get %s external metric: %w", e.Metric.Name, err)
			}
			*status = autoscalingv2.MetricStatus{Type: spec.Type, External: &autoscalingv2.ExternalMetricStatus{
				Metric: e.Metric, Current: autoscalingv2.MetricValueStatus{AverageValue: milli(usage)}}}
			return n, name, none, nil
		case e.Target.Value != nil:
			n, usage, _, err := hc.calc.externalReplicas(ctx, specReplicas, e.Target.Value.MilliValue(), e.Metric.Name, tol, ns, e.Metric.Selector, selector)
			if err != nil {
				return 0, "", hc.unable(hpa, "FailedGetExternalMetric", err), fmt.Errorf("failed to get external metric %s: %w", e.Metric.Name, err)
			}
			*status = autoscalingv2.MetricStatus{Type: spec.Type, External: &autoscalingv2.ExternalMetricStatus{
				Metric: e.Metric, Current: autoscalingv2.MetricValueStatus{Value: milli(usage)}}}
			return n, name, none, nil
		}
		err := errors.New("invalid external metric source: neither a value target nor an average value target was set")
		return 0, "", hc.unable(hpa, "FailedGetExternalMetric", err), err
	}
	// Validation rejects other types; an object written around it still
	// gets a condition rather than a crash.
	err := fmt.Errorf("unknown metric source type %q", spec.Type)
	return 0, "", hc.unable(hpa, "InvalidMetricSourceType", err), err
}

// resourceProposal is the proposal for a Resource or ContainerResource
// metric: an average value (milli-units per pod) or an average
// utilization (percent of requests).
func (hc *Controller) resourceProposal(ctx context.Context, current int32, target autoscalingv2.MetricTarget, res corev1.ResourceName, ns, container string, selector labels.Selector, tol tolerances, typ autoscalingv2.MetricSourceType) (int32, *autoscalingv2.MetricValueStatus, string, error) {
	if target.AverageValue != nil {
		n, raw, _, err := hc.calc.rawResourceReplicas(ctx, current, target.AverageValue.MilliValue(), res, tol, ns, selector, container)
		if err != nil {
			return 0, nil, "", fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		return n, &autoscalingv2.MetricValueStatus{AverageValue: milli(raw)}, fmt.Sprintf("%s resource", res), nil
	}
	if target.AverageUtilization == nil {
		return 0, nil, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	n, util, raw, _, err := hc.calc.resourceReplicas(ctx, current, *target.AverageUtilization, res, tol, ns, selector, container)
	if err != nil {
		return 0, nil, "", fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	name := fmt.Sprintf("%s resource utilization (percentage of request)", res)
	if typ == autoscalingv2.ContainerResourceMetricSourceType {
		name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
	}
	return n, &autoscalingv2.MetricValueStatus{AverageUtilization: &util, AverageValue: milli(raw)}, name, nil
}

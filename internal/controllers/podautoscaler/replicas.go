package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"
)

// tolerances is how far a usage ratio may stray from 1 in each direction
// before the calculator proposes a change.
type tolerances struct{ scaleDown, scaleUp float64 }

func (t tolerances) within(ratio float64) bool {
	return 1-t.scaleDown <= ratio && ratio <= 1+t.scaleUp
}

// calculator is upstream's ReplicaCalculator: it turns a metric and the
// pods behind a scale target into a proposed replica count. It reads pods
// from the cache and metrics from the source; it keeps no state.
type calculator struct {
	metrics MetricsSource
	pods    corelisters.PodLister
	clock   clock.PassiveClock
	// cpuInitialization is how long after a pod starts its CPU samples are
	// distrusted unless it is ready and was ready a whole window before the
	// sample; readinessDelay is how long after start a pod that was never
	// ready is still taken as starting up.
	cpuInitialization, readinessDelay time.Duration
}

var (
	errNoPods       = errors.New("no pods returned by selector while calculating replica count")
	errNoPodMetrics = errors.New("did not receive metrics for targeted pods (pods might be unready)")
)

// resourceReplicas proposes a replica count for a utilization target (a
// percentage of requests), with the utilization and the average raw usage
// (milli-units) it saw.
func (c *calculator) resourceReplicas(ctx context.Context, current, target int32, resource corev1.ResourceName, tol tolerances, namespace string, selector labels.Selector, container string) (replicas, utilization int32, raw int64, ts time.Time, err error) {
	metrics, ts, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	ready, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, 0, time.Time{}, errNoPodMetrics
	}
	requests, err := podRequests(pods, container, resource)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	ratio, utilization, raw, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}

	scaleUpWithUnready := len(unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(missing) == 0 {
		if tol.within(ratio) {
			return current, utilization, raw, ts, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), utilization, raw, ts, nil
	}

	// Fill in the pods we have no trustworthy sample for, in the direction
	// that dampens the change: missing pods use their whole request (or the
	// target, if above 100%) on a scale-down and nothing on a scale-up;
	// unready pods nothing on a scale-up.
	if len(missing) > 0 {
		switch {
		case ratio < 1:
			fallback := int64(max(100, target))
			for name := range missing {
				metrics[name] = PodMetric{Value: requests[name] * fallback / 100}
			}
		case ratio > 1:
			for name := range missing {
				metrics[name] = PodMetric{Value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = PodMetric{Value: 0}
		}
	}
	newRatio, _, _, err := utilizationRatio(metrics, requests, target)
	if err != nil {
		return 0, utilization, raw, time.Time{}, err
	}
	return dampened(current, ratio, newRatio, len(metrics), tol), utilization, raw, ts, nil
}

// dampened is the proposal after missing and unready pods were filled in:
// no change when it is within tolerance or the filling reversed the
// direction, else newRatio over every pod counted.
func dampened(current int32, ratio, newRatio float64, counted int, tol tolerances) int32 {
	if tol.within(newRatio) || (ratio < 1 && newRatio > 1) || (ratio > 1 && newRatio < 1) {
		return current
	}
	n := int32(math.Ceil(newRatio * float64(counted)))
	if (newRatio < 1 && n > current) || (newRatio > 1 && n < current) {
		return current
	}
	return n
}

// rawResourceReplicas proposes a replica count for an average-value
// target (milli-units per pod) of a resource.
func (c *calculator) rawResourceReplicas(ctx context.Context, current int32, target int64, resource corev1.ResourceName, tol tolerances, namespace string, selector labels.Selector, container string) (int32, int64, time.Time, error) {
	metrics, ts, err := c.metrics.ResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	n, usage, err := c.plainReplicas(metrics, current, target, tol, namespace, selector, resource)
	return n, usage, ts, err
}

// podsReplicas proposes a replica count for a Pods metric's average-value
// target.
func (c *calculator) podsReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, selector, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	metrics, ts, err := c.metrics.PodsMetric(ctx, name, namespace, selector, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w", name, err)
	}
	n, usage, err := c.plainReplicas(metrics, current, target, tol, namespace, selector, "")
	return n, usage, ts, err
}

// plainReplicas is the calculation for per-pod values that are not a
// percentage of requests.
func (c *calculator) plainReplicas(metrics PodMetricsInfo, current int32, target int64, tol tolerances, namespace string, selector labels.Selector, resource corev1.ResourceName) (int32, int64, error) {
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, 0, err
	}
	ready, unready, missing, ignored := c.groupPods(pods, metrics, resource)
	removeMetrics(metrics, ignored)
	removeMetrics(metrics, unready)
	if len(metrics) == 0 {
		return 0, 0, errNoPodMetrics
	}
	ratio, usage := usageRatio(metrics, target)

	scaleUpWithUnready := len(unready) > 0 && ratio > 1
	if !scaleUpWithUnready && len(missing) == 0 {
		if tol.within(ratio) {
			return current, usage, nil
		}
		return int32(math.Ceil(ratio * float64(ready))), usage, nil
	}
	if len(missing) > 0 {
		// Missing pods use exactly the target on a scale-down, nothing on a
		// scale-up.
		fill := int64(0)
		if ratio < 1 {
			fill = target
		}
		for name := range missing {
			metrics[name] = PodMetric{Value: fill}
		}
	}
	if scaleUpWithUnready {
		for name := range unready {
			metrics[name] = PodMetric{Value: 0}
		}
	}
	newRatio, _ := usageRatio(metrics, target)
	return dampened(current, ratio, newRatio, len(metrics), tol), usage, nil
}

// objectReplicas proposes a replica count for an Object metric's value
// target: the ratio times the ready pods.
func (c *calculator) objectReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, ref *autoscalingv2.CrossVersionObjectReference, selector, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	usage, _, err := c.metrics.ObjectMetric(ctx, name, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w on %s %s/%s", name, err, ref.Kind, namespace, ref.Name)
	}
	n, err := c.usageRatioReplicas(current, float64(usage)/float64(target), tol, namespace, selector)
	return n, usage, time.Time{}, err
}

// objectPerPodReplicas proposes a replica count for an Object metric's
// average-value target: the value spread over the target's replicas.
func (c *calculator) objectPerPodReplicas(ctx context.Context, statusReplicas int32, target int64, name string, tol tolerances, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int32, int64, time.Time, error) {
	usage, ts, err := c.metrics.ObjectMetric(ctx, name, namespace, ref, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w on %s %s/%s", name, err, ref.Kind, namespace, ref.Name)
	}
	n, avg := perPodReplicas(statusReplicas, usage, target, tol)
	return n, avg, ts, nil
}

// perPodReplicas spreads a total over statusReplicas against a per-pod
// target: the replicas to propose and the per-pod average.
func perPodReplicas(statusReplicas int32, total, target int64, tol tolerances) (int32, int64) {
	n := statusReplicas
	if !tol.within(float64(total) / (float64(target) * float64(n))) {
		n = int32(math.Ceil(float64(total) / float64(target)))
	}
	return n, int64(math.Ceil(float64(total) / float64(statusReplicas)))
}

// usageRatioReplicas is ratio times the ready pods, or, from zero
// replicas, the ratio itself rounded up (so a target can scale from zero).
func (c *calculator) usageRatioReplicas(current int32, ratio float64, tol tolerances, namespace string, selector labels.Selector) (int32, error) {
	if current == 0 {
		return int32(math.Ceil(ratio)), nil
	}
	if tol.within(ratio) {
		return current, nil
	}
	pods, err := c.listPods(namespace, selector)
	if err != nil {
		return 0, fmt.Errorf("unable to calculate ready pods: %w", err)
	}
	ready := 0
	for _, p := range pods {
		if p.Status.Phase == corev1.PodRunning && isReady(p) {
			ready++
		}
	}
	return int32(math.Ceil(ratio * float64(ready))), nil
}

// externalReplicas proposes a replica count for an External metric's
// value target: the sum of its values against the target.
func (c *calculator) externalReplicas(ctx context.Context, current int32, target int64, name string, tol tolerances, namespace string, metricSelector *metav1.LabelSelector, selector labels.Selector) (int32, int64, time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, _, err := c.metrics.ExternalMetric(ctx, name, namespace, sel)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %w", namespace, name, metricSelector, err)
	}
	usage := sum(values)
	n, err := c.usageRatioReplicas(current, float64(usage)/float64(target), tol, namespace, selector)
	return n, usage, time.Time{}, err
}

// externalPerPodReplicas proposes a replica count for an External
// metric's average-value target.
func (c *calculator) externalPerPodReplicas(ctx context.Context, statusReplicas int32, target int64, name string, tol tolerances, namespace string, metricSelector *metav1.LabelSelector) (int32, int64, time.Time, error) {
	sel, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, ts, err := c.metrics.ExternalMetric(ctx, name, namespace, sel)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %w", namespace, name, metricSelector, err)
	}
	n, avg := perPodReplicas(statusReplicas, sum(values), target, tol)
	return n, avg, ts, nil
}

func sum(vs []int64) int64 {
	var s int64
	for _, v := range vs {
		s += v
	}
	return s
}

func (c *calculator) listPods(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	pods, err := c.pods.Pods(namespace).List(selector)
	if err != nil {
		return nil, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(pods) == 0 {
		return nil, errNoPods
	}
	return pods, nil
}

// groupPods sorts pods by how their sample counts: pods being deleted or
// failed are ignored; pending pods, and (for CPU) pods whose sample may
// predate their readiness, are unready; pods without a sample are
// missing; the rest are ready and counted.
func (c *calculator) groupPods(pods []*corev1.Pod, metrics PodMetricsInfo, resource corev1.ResourceName) (ready int, unready, missing, ignored sets.Set[string]) {
	unready, missing, ignored = sets.New[string](), sets.New[string](), sets.New[string]()
	now := c.clock.Now()
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed {
			ignored.Insert(p.Name)
			continue
		}
		if p.Status.Phase == corev1.PodPending {
			unready.Insert(p.Name)
			continue
		}
		m, ok := metrics[p.Name]
		if !ok {
			missing.Insert(p.Name)
			continue
		}
		if resource == corev1.ResourceCPU && c.cpuUnready(p, m, now) {
			unready.Insert(p.Name)
			continue
		}
		ready++
	}
	return ready, unready, missing, ignored
}

// cpuUnready reports whether a pod's CPU sample is not to be trusted: CPU
// spikes while a pod initializes. Within cpuInitialization of its start, a
// pod counts only if ready and its sample's window began after it turned
// ready; after that, only a pod that has never been ready (its readiness
// last changed within readinessDelay of its start, to false) is unready.
func (c *calculator) cpuUnready(p *corev1.Pod, m PodMetric, now time.Time) bool {
	cond := readyCondition(p)
	if cond == nil || p.Status.StartTime == nil {
		return true
	}
	start := p.Status.StartTime.Time
	if start.Add(c.cpuInitialization).After(now) {
		return cond.Status == corev1.ConditionFalse || m.Timestamp.Before(cond.LastTransitionTime.Add(m.Window))
	}
	return cond.Status == corev1.ConditionFalse && start.Add(c.readinessDelay).After(cond.LastTransitionTime.Time)
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func removeMetrics(metrics PodMetricsInfo, pods sets.Set[string]) {
	for name := range pods {
		delete(metrics, name)
	}
}

// podRequests is each pod's request of resource in milli-units: the pod's
// own (pod-level resources) when it sets one and no container is named,
// else the sum over its containers and sidecars (restartable init
// containers), or the named container's. A container without a request
// makes utilization undefined: an error, as upstream.
func podRequests(pods []*corev1.Pod, container string, resource corev1.ResourceName) (map[string]int64, error) {
	out := make(map[string]int64, len(pods))
	for _, p := range pods {
		if container == "" && p.Spec.Resources != nil {
			if q, ok := p.Spec.Resources.Requests[resource]; ok {
				out[p.Name] = q.MilliValue()
				continue
			}
		}
		cs := append([]corev1.Container{}, p.Spec.Containers...)
		for _, ic := range p.Spec.InitContainers {
			if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				cs = append(cs, ic)
			}
		}
		var total int64
		for _, ct := range cs {
			if container != "" && container != ct.Name {
				continue
			}
			q, ok := ct.Resources.Requests[resource]
			if !ok {
				return nil, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, ct.Name, p.Name)
			}
			total += q.MilliValue()
		}
		out[p.Name] = total
	}
	return out, nil
}

// utilizationRatio is total usage over total requests of the pods with
// both, as a percentage (rounded down, as upstream) and divided by the
// target; and the average raw usage.
func utilizationRatio(metrics PodMetricsInfo, requests map[string]int64, target int32) (float64, int32, int64, error) {
	var used, requested int64
	n := 0
	for name, m := range metrics {
		r, ok := requests[name]
		if !ok {
			continue // a sample for a pod we do not know
		}
		used += m.Value
		requested += r
		n++
	}
	if requested == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	util := int32(used * 100 / requested)
	return float64(util) / float64(target), util, used / int64(n), nil
}

// usageRatio is the average value over the target, and the average.
func usageRatio(metrics PodMetricsInfo, target int64) (float64, int64) {
	var total int64
	for _, m := range metrics {
		total += m.Value
	}
	avg := total / int64(len(metrics))
	return float64(avg) / float64(target), avg
}

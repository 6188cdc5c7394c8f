package podautoscaler

import (
	"context"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
)

// PodMetric is one pod's sample of a metric, in milli-units.
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64
}

// PodMetricsInfo maps pod names to their samples.
type PodMetricsInfo map[string]PodMetric

// MetricsSource is where the controller reads metrics. Every method takes
// the HPA's namespace; the errors it returns end up, wrapped, in the HPA's
// ScalingActive condition and events, so they should read like upstream's
// ("unable to fetch metrics from resource metrics API: ...").
type MetricsSource interface {
	// ResourceMetric is the usage of resource (cpu, memory) of the pods
	// selector selects, summed over their containers or, when container is
	// not empty, of that container alone; and the time of the first sample.
	ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetricsInfo, time.Time, error)
	// PodsMetric is the custom metric name of the pods selector selects.
	PodsMetric(ctx context.Context, name, namespace string, selector, metricSelector labels.Selector) (PodMetricsInfo, time.Time, error)
	// ObjectMetric is the custom metric name of one object.
	ObjectMetric(ctx context.Context, name, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	// ExternalMetric is every value of the external metric name.
	ExternalMetric(ctx context.Context, name, namespace string, selector labels.Selector) ([]int64, time.Time, error)
}

// metricServerDefaultWindow is the window assumed for custom metrics that
// state none, as upstream.
const metricServerDefaultWindow = time.Minute

// RESTMetrics reads metrics from the aggregated APIs, as upstream's
// REST metrics client: metrics.k8s.io/v1beta1 PodMetrics,
// custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1.
type RESTMetrics struct {
	Resource resourceclient.PodMetricsesGetter
	Custom   custom_metrics.CustomMetricsClient
	External external_metrics.ExternalMetricsClient
}

var _ MetricsSource = (*RESTMetrics)(nil)

// NewRESTMetrics builds the three clients from rc; mapper maps the kinds
// of Object metrics to resources.
func NewRESTMetrics(rc *rest.Config, mapper meta.RESTMapper) (*RESTMetrics, error) {
	res, err := resourceclient.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("resource metrics client: %w", err)
	}
	custom, err := custom_metrics.NewForVersionForConfig(rest.CopyConfig(rc), mapper, cmv1beta2.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("custom metrics client: %w", err)
	}
	ext, err := external_metrics.NewForConfig(rest.CopyConfig(rc))
	if err != nil {
		return nil, fmt.Errorf("external metrics client: %w", err)
	}
	return &RESTMetrics{Resource: res, Custom: custom, External: ext}, nil
}

// ResourceMetric implements MetricsSource.
func (m *RESTMetrics) ResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetricsInfo, time.Time, error) {
	list, err := m.Resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, fmt.Errorf("no metrics returned from resource metrics API")
	}
	var res PodMetricsInfo
	if container != "" {
		if res, err = containerMetrics(list.Items, resource, container); err != nil {
			return nil, time.Time{}, fmt.Errorf("failed to get container metrics: %w", err)
		}
	} else {
		res = podMetrics(list.Items, resource)
	}
	return res, list.Items[0].Timestamp.Time, nil
}

// containerMetrics is container's usage of resource per pod; a pod
// without the container is an error, one without the resource is missing.
func containerMetrics(items []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) (PodMetricsInfo, error) {
	res := make(PodMetricsInfo, len(items))
	for _, m := range items {
		found := false
		for _, c := range m.Containers {
			if c.Name != container {
				continue
			}
			found = true
			if v, ok := c.Usage[resource]; ok {
				res[m.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: v.MilliValue()}
			}
			break
		}
		if !found {
			return nil, fmt.Errorf("container %s not present in metrics for pod %s/%s", container, m.Namespace, m.Name)
		}
	}
	return res, nil
}

// podMetrics sums each pod's containers; a pod with a container lacking
// the resource (or with no containers) is left out, so it counts as
// missing.
func podMetrics(items []metricsv1beta1.PodMetrics, resource corev1.ResourceName) PodMetricsInfo {
	res := make(PodMetricsInfo, len(items))
	for _, m := range items {
		sum, missing := int64(0), len(m.Containers) == 0
		for _, c := range m.Containers {
			v, ok := c.Usage[resource]
			if !ok {
				missing = true
				break
			}
			sum += v.MilliValue()
		}
		if !missing {
			res[m.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: sum}
		}
	}
	return res
}

// PodsMetric implements MetricsSource.
func (m *RESTMetrics) PodsMetric(_ context.Context, name, namespace string, selector, metricSelector labels.Selector) (PodMetricsInfo, time.Time, error) {
	list, err := m.Custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, name, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, fmt.Errorf("no metrics returned from custom metrics API")
	}
	res := make(PodMetricsInfo, len(list.Items))
	for _, v := range list.Items {
		window := metricServerDefaultWindow
		if v.WindowSeconds != nil {
			window = time.Duration(*v.WindowSeconds) * time.Second
		}
		res[v.DescribedObject.Name] = PodMetric{Timestamp: v.Timestamp.Time, Window: window, Value: v.Value.MilliValue()}
	}
	return res, list.Items[0].Timestamp.Time, nil
}

// ObjectMetric implements MetricsSource. A Namespace is asked for at the
// root with the HPA's own namespace: a reference may not leave it.
func (m *RESTMetrics) ObjectMetric(_ context.Context, name, namespace string, ref *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var (
		v   *cmv1beta2.MetricValue
		err error
	)
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		v, err = m.Custom.RootScopedMetrics().GetForObject(gvk.GroupKind(), namespace, name, metricSelector)
	} else {
		v, err = m.Custom.NamespacedMetrics(namespace).GetForObject(gvk.GroupKind(), ref.Name, name, metricSelector)
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return v.Value.MilliValue(), v.Timestamp.Time, nil
}

// ExternalMetric implements MetricsSource.
func (m *RESTMetrics) ExternalMetric(_ context.Context, name, namespace string, selector labels.Selector) ([]int64, time.Time, error) {
	list, err := m.External.NamespacedMetrics(namespace).List(name, selector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, fmt.Errorf("no metrics returned from external metrics API")
	}
	out := make([]int64, 0, len(list.Items))
	for _, v := range list.Items {
		out = append(out, v.Value.MilliValue())
	}
	return out, list.Items[0].Timestamp.Time, nil
}

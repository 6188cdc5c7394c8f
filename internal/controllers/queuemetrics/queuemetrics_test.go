package queuemetrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/util/workqueue"
)

func TestProvider(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Two providers on one registry share the vectors.
	// Retries wait an hour, so the retried item never lands in the depth.
	q1 := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "one", MetricsProvider: Provider(reg)})
	q2 := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "two", MetricsProvider: Provider(reg)})
	defer q1.ShutDown()
	defer q2.ShutDown()
	q1.Add("a")
	q1.Add("b")
	q2.Add("c")
	item, _ := q1.Get()
	q1.Done(item)
	q1.AddRateLimited("z")
	want := map[string]float64{"one": 1, "two": 1}
	vec := Provider(reg).(*provider).depth
	for name, v := range want {
		if got := value(t, vec.WithLabelValues(name)); got != v {
			t.Errorf("depth{%s} = %v, want %v", name, got, v)
		}
	}
	if got := value(t, Provider(reg).(*provider).adds.WithLabelValues("one")); got != 2 {
		t.Errorf("adds{one} = %v, want 2", got)
	}
	if got := value(t, Provider(reg).(*provider).retries.WithLabelValues("one")); got != 1 {
		t.Errorf("retries{one} = %v, want 1", got)
	}
	if Provider(nil) != nil {
		t.Error("nil registry gave a provider")
	}
}

func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		t.Fatal(err)
	}
	switch {
	case out.Gauge != nil:
		return out.Gauge.GetValue()
	case out.Counter != nil:
		return out.Counter.GetValue()
	}
	t.Fatal("not a gauge or counter")
	return 0
}

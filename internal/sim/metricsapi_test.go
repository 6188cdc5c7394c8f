package sim

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

func metricsPod(name string, annotations map[string]string, containers ...corev1.Container) *corev1.Pod {
	p := newPod(name, "")
	p.Labels = map[string]string{"app": "web"}
	p.Annotations = annotations
	p.Spec.Containers = containers
	return p
}

func requesting(name, cpu, mem string) corev1.Container {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return corev1.Container{Name: name, Image: "nginx:1.27", Resources: corev1.ResourceRequirements{Requests: rl}}
}

// TestMetricsAPI reads the hollow node's metrics.k8s.io through client-go's
// metrics clientset, as kubectl top and the HPA controller do.
func TestMetricsAPI(t *testing.T) {
	ts, n := podTestSim(t)
	ts.create(t, n, metricsPod("annotated", map[string]string{AnnotationCPUUsage: "250m", AnnotationMemoryUsage: "64Mi"},
		requesting("app", "300m", "100Mi"), requesting("sidecar", "100m", "")))
	ts.create(t, n, metricsPod("plain", nil, requesting("app", "400m", "128Mi")))
	ts.advance(t, time.Second, 100*time.Millisecond)
	pending := metricsPod("pending", nil, requesting("app", "100m", ""))
	pending.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000") // does not fit: rejected
	ts.create(t, n, pending)
	other := metricsPod("elsewhere", nil, requesting("app", "100m", ""))
	other.Namespace = "other"
	ts.create(t, n, other)
	ts.advance(t, time.Second, 100*time.Millisecond)

	srv := httptest.NewServer(ts.MetricsAPIHandler())
	defer srv.Close()
	mc, err := metricsclient.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	rl, err := mc.Discovery().ServerResourcesForGroupVersion("metrics.k8s.io/v1beta1")
	if err != nil || len(rl.APIResources) != 2 {
		t.Fatalf("discovery: %v %+v", err, rl)
	}
	groups, err := mc.Discovery().ServerGroups()
	if err != nil || len(groups.Groups) != 1 || groups.Groups[0].PreferredVersion.GroupVersion != "metrics.k8s.io/v1beta1" {
		t.Fatalf("groups: %v %+v", err, groups)
	}

	list, err := mc.MetricsV1beta1().PodMetricses("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	usage := map[string]map[string]string{}
	for _, pm := range list.Items {
		if pm.Window.Duration != 30*time.Second || pm.Timestamp.IsZero() || pm.Labels["app"] != "web" {
			t.Errorf("%s: window %v timestamp %v labels %v", pm.Name, pm.Window, pm.Timestamp, pm.Labels)
		}
		for _, c := range pm.Containers {
			usage[pm.Name+"/"+c.Name] = map[string]string{"cpu": c.Usage.Cpu().String(), "memory": c.Usage.Memory().String()}
		}
	}
	want := map[string]map[string]string{
		// 250m spread 3:1 over the CPU requests; all 64Mi on the one
		// container requesting memory.
		"annotated/app":     {"cpu": "187m", "memory": "64Mi"},
		"annotated/sidecar": {"cpu": "62m", "memory": "0"},
		// Half the requests.
		"plain/app": {"cpu": "200m", "memory": "64Mi"},
	}
	if len(usage) != len(want) {
		t.Fatalf("usage %v, want %v (pending and other-namespace pods absent)", usage, want)
	}
	for k, w := range want {
		if usage[k]["cpu"] != w["cpu"] || usage[k]["memory"] != w["memory"] {
			t.Errorf("%s usage %v, want %v", k, usage[k], w)
		}
	}

	if l, err := mc.MetricsV1beta1().PodMetricses("default").List(ctx, metav1.ListOptions{LabelSelector: "app=db"}); err != nil || len(l.Items) != 0 {
		t.Errorf("app=db: %v %d items", err, len(l.Items))
	}
	if _, err := mc.MetricsV1beta1().PodMetricses("default").List(ctx, metav1.ListOptions{LabelSelector: "app in (("}); !apierrors.IsBadRequest(err) {
		t.Errorf("bad selector: %v, want BadRequest", err)
	}
	all, err := mc.MetricsV1beta1().PodMetricses("").List(ctx, metav1.ListOptions{})
	if err != nil || len(all.Items) != 3 {
		t.Errorf("all namespaces: %v %d items, want 3", err, len(all.Items))
	}
	pm, err := mc.MetricsV1beta1().PodMetricses("default").Get(ctx, "plain", metav1.GetOptions{})
	if err != nil || pm.Name != "plain" || len(pm.Containers) != 1 {
		t.Errorf("get plain: %v %+v", err, pm)
	}
	if _, err := mc.MetricsV1beta1().PodMetricses("default").Get(ctx, "pending", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get pending: %v, want NotFound", err)
	}

	nodes, err := mc.MetricsV1beta1().NodeMetricses().List(ctx, metav1.ListOptions{LabelSelector: LabelHollowNode + "=true"})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %+v", err, nodes)
	}
	nm := nodes.Items[0]
	// 187m + 62m + 200m + 50m (the other namespace's pod).
	if nm.Name != "hollow-node-0" || nm.Usage.Cpu().MilliValue() != 499 || nm.Usage.Memory().Value() != 128<<20 {
		t.Errorf("node usage %v %v", nm.Usage.Cpu(), nm.Usage.Memory())
	}
	if _, err := mc.MetricsV1beta1().NodeMetricses().Get(ctx, "hollow-node-9", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get unknown node: %v, want NotFound", err)
	}
	if got, err := mc.MetricsV1beta1().NodeMetricses().Get(ctx, "hollow-node-0", metav1.GetOptions{}); err != nil || got.Usage.Cpu().MilliValue() != 499 {
		t.Errorf("get node: %v %+v", err, got)
	}
}

func TestContainerUsage(t *testing.T) {
	cases := []struct {
		name     string
		ann      map[string]string
		fraction float64
		cs       []corev1.Container
		want     []string // cpu/memory per container
	}{
		{name: "fraction of requests", fraction: 0.25, cs: []corev1.Container{requesting("a", "1", "1Gi")}, want: []string{"250m/256Mi"}},
		{name: "no fraction", fraction: -1, cs: []corev1.Container{requesting("a", "1", "1Gi")}, want: []string{"0/0"}},
		{name: "annotation split by requests", ann: map[string]string{AnnotationCPUUsage: "1"},
			fraction: 0.5, cs: []corev1.Container{requesting("a", "100m", ""), requesting("b", "300m", "")}, want: []string{"250m/0", "750m/0"}},
		{name: "annotation split evenly without requests", ann: map[string]string{AnnotationCPUUsage: "1", AnnotationMemoryUsage: "1Gi"},
			fraction: 0.5, cs: []corev1.Container{requesting("a", "", ""), requesting("b", "", "")}, want: []string{"500m/512Mi", "500m/512Mi"}},
		{name: "unparsable annotation falls back", ann: map[string]string{AnnotationCPUUsage: "lots"},
			fraction: 0.5, cs: []corev1.Container{requesting("a", "1", "")}, want: []string{"500m/0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := containerUsage(metricsPod("p", tc.ann, tc.cs...), tc.fraction)
			for i, w := range tc.want {
				if g := got[i].Usage.Cpu().String() + "/" + got[i].Usage.Memory().String(); g != w {
					t.Errorf("container %d: %s, want %s", i, g, w)
				}
			}
		})
	}
}

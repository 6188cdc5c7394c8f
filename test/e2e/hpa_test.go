package e2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/myriad-k8s/myriad/internal/sim"
)

// hpaDeploymentYAML is a one-replica Deployment with CPU requests (so a
// utilization target is computable once metrics exist) and an HPA that
// wants at least 3.
const hpaDeploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: hpa-e2e}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {sim.myriad.io/cpu-usage: 150m}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: {requests: {cpu: 100m}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: hpa-e2e}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: hpa-e2e}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 3
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`

// noMetricsMessage is ScalingActive's message while no metrics API is
// registered (before the last subtest registers the hollow nodes'),
// word for word as upstream's.
const noMetricsMessage = "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: " +
	"unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"

// TestHPA runs the horizontal pod autoscaler controller in a real
// `myriad up` with hollow nodes: below minReplicas it scales the target up
// without metrics; at the minimum it reports that it cannot read metrics
// while no metrics API is registered; kubectl autoscale makes a working
// HPA; once the hollow nodes' metrics API is registered as an APIService,
// it scales on their CPU metrics through the aggregation layer.
func TestHPA(t *testing.T) {
	srv, hs := startWithHollowNodes(t, "hpa", 3, nil)

	c := srv.client(t)
	ctx := context.Background()
	const ns = "hpa-e2e"
	srv.mustKubectl(t, "", "create", "namespace", ns)
	srv.mustKubectl(t, hpaDeploymentYAML, "apply", "-f", "-")

	t.Run("below minReplicas scales to the minimum", func(t *testing.T) {
		// The first sync comes a sync period (15 s) after creation, as
		// upstream; the status shows 3 current replicas one period later.
		hpa := waitHPA(t, c, ns, "web", 75*time.Second, func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.CurrentReplicas == 3 && findHPACondition(h, autoscalingv2.ScalingActive) != nil
		})
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("deployment replicas %d, want 3", *d.Spec.Replicas)
		}
		if hpa.Status.DesiredReplicas != 3 || hpa.Status.LastScaleTime == nil || hpa.Status.ObservedGeneration == nil {
			t.Errorf("status %+v", hpa.Status)
		}
		sa := findHPACondition(hpa, autoscalingv2.ScalingActive)
		if sa == nil || sa.Status != corev1.ConditionFalse || sa.Reason != "FailedGetResourceMetric" || sa.Message != noMetricsMessage {
			t.Errorf("ScalingActive %+v\nwant False FailedGetResourceMetric %q", sa, noMetricsMessage)
		}
		if at := findHPACondition(hpa, autoscalingv2.AbleToScale); at == nil || at.Status != corev1.ConditionTrue {
			t.Errorf("AbleToScale %+v", at)
		}

		out := srv.mustKubectl(t, "", "-n", ns, "get", "hpa", "web")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 {
			t.Fatalf("kubectl get hpa:\n%s", out)
		}
		// Columns by the header's offsets: TARGETS holds a space.
		col := map[string]string{}
		header := lines[0]
		for _, h := range strings.Fields(header) {
			start := strings.Index(header, h)
			end := len(lines[1])
			if rest := header[start+len(h):]; strings.TrimLeft(rest, " ") != "" {
				end = min(end, start+len(h)+len(rest)-len(strings.TrimLeft(rest, " ")))
			}
			if start < len(lines[1]) {
				col[h] = strings.TrimSpace(lines[1][start:end])
			}
		}
		if col["REPLICAS"] != "3" || col["MINPODS"] != "3" || col["MAXPODS"] != "5" || col["REFERENCE"] != "Deployment/web" || col["TARGETS"] != "cpu: <unknown>/50%" {
			t.Errorf("kubectl get hpa:\n%s", out)
		}

		desc := srv.mustKubectl(t, "", "-n", ns, "describe", "hpa", "web")
		for _, want := range []string{
			"ScalingActive  False   FailedGetResourceMetric",
			"SuccessfulRescale",
			"New size: 3; reason: Current number of replicas below Spec.MinReplicas",
			"FailedGetResourceMetric",
			"Deployment pods:",
		} {
			if !strings.Contains(strings.Join(strings.Fields(desc), " "), strings.Join(strings.Fields(want), " ")) {
				t.Errorf("kubectl describe hpa lacks %q:\n%s", want, desc)
			}
		}
	})

	t.Run("hollow nodes serve the pods' metrics", func(t *testing.T) {
		// What the aggregation layer routes metrics.k8s.io to once
		// registered: the web pods, now 3 on hollow nodes, use their
		// annotated 150m.
		ms := httptest.NewServer(hs.MetricsAPIHandler())
		defer ms.Close()
		mc, err := metricsclient.NewForConfig(&rest.Config{Host: ms.URL})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for _, pm := range list.Items {
				for _, c := range pm.Containers {
					got = append(got, c.Usage.Cpu().String())
				}
			}
			if strings.Join(got, ",") == "150m,150m,150m" {
				return
			}
		}
		t.Fatalf("web pods' cpu usage %v, want 150m each of 3", got)
	})

	t.Run("myriad sim --metrics-api-address", func(t *testing.T) {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		cmd := exec.Command(binary, "sim", "--kubeconfig", srv.kubeconfig, "--nodes", "1", "--first-index", "10",
			"--metrics-api-address", addr, "--status-interval", "0")
		var out safeBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGINT)
			_ = cmd.Wait()
			// Its Node stays Ready until its Lease expires: gone, no later
			// pod (the next subtests' Deployments) is scheduled onto a
			// node nobody runs, where it would never start or report.
			if err := c.CoreV1().Nodes().Delete(ctx, "hollow-node-10", metav1.DeleteOptions{}); err != nil {
				t.Errorf("deleting hollow-node-10: %v", err)
			}
		}()
		mc, err := metricsclient.NewForConfig(&rest.Config{Host: "http://" + addr})
		if err != nil {
			t.Fatal(err)
		}
		var lastErr error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
			nm, err := mc.MetricsV1beta1().NodeMetricses().Get(ctx, "hollow-node-10", metav1.GetOptions{})
			if err == nil && nm.Usage.Cpu() != nil {
				return
			}
			lastErr = err
		}
		t.Fatalf("no NodeMetrics for hollow-node-10: %v\n%s", lastErr, out.String())
	})

	t.Run("kubectl autoscale", func(t *testing.T) {
		srv.mustKubectl(t, "", "-n", ns, "autoscale", "deployment", "api", "--min=2", "--max=5", "--cpu-percent=50")
		hpa, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := hpa.Spec.Metrics
		if *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 5 || hpa.Spec.ScaleTargetRef.Name != "api" || len(m) != 1 ||
			m[0].Resource == nil || m[0].Resource.Name != corev1.ResourceCPU || m[0].Resource.Target.AverageUtilization == nil || *m[0].Resource.Target.AverageUtilization != 50 {
			t.Fatalf("spec %+v", hpa.Spec)
		}
		waitHPA(t, c, ns, "api", 60*time.Second, func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			return h.Status.DesiredReplicas == 2
		})
		d, err := c.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 2 {
			t.Errorf("deployment replicas %d, want 2", *d.Spec.Replicas)
		}
		// The autoscaling/v1 view of the same object.
		v1, err := c.AutoscalingV1().HorizontalPodAutoscalers(ns).Get(ctx, "api", metav1.GetOptions{})
		if err != nil || v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 50 || v1.Status.DesiredReplicas != 2 {
			t.Errorf("v1: %v %+v", err, v1)
		}
	})

	t.Run("myriad up's controller scales on hollow-node metrics through the aggregator", func(t *testing.T) {
		// The hollow nodes' metrics API registered as the APIService
		// v1beta1.metrics.k8s.io: the server's own HPA controller reads
		// PodMetrics through the aggregation layer.
		const simNS = "hpa-sim"
		srv.mustKubectl(t, "", "create", "namespace", simNS)
		srv.mustKubectl(t, strings.ReplaceAll(burnYAML, "NS", simNS), "apply", "-f", "-")
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		m, err := hs.RegisterMetricsAPI(ctx, srv.restConfig(t), sim.MetricsAPIService{Listen: fmt.Sprintf("127.0.0.1:%d", port)})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := m.Close(ctx); err != nil {
				t.Error(err)
			}
		}()
		// 150m used of 100m requested against a 50% target: up to 4 at
		// once (the scale-up limit), then the maximum, 5, one sync period
		// (15 s) apart.
		hpa := waitHPA(t, c, simNS, "burn", 120*time.Second, func(h *autoscalingv2.HorizontalPodAutoscaler) bool {
			d, err := c.AppsV1().Deployments(simNS).Get(ctx, "burn", metav1.GetOptions{})
			return err == nil && *d.Spec.Replicas == 5 && h.Status.DesiredReplicas == 5
		})
		if len(hpa.Status.CurrentMetrics) != 1 || hpa.Status.CurrentMetrics[0].Resource == nil ||
			hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization == nil || *hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization != 150 {
			t.Errorf("currentMetrics %+v, want cpu at 150%%", hpa.Status.CurrentMetrics)
		}
		if sa := findHPACondition(hpa, autoscalingv2.ScalingActive); sa == nil || sa.Status != corev1.ConditionTrue || sa.Reason != "ValidMetricFound" {
			t.Errorf("ScalingActive %+v, want True ValidMetricFound", sa)
		}
		out := srv.mustKubectl(t, "", "top", "pods", "-n", simNS, "--no-headers")
		if n := strings.Count(out, "150m"); n < 2 {
			t.Errorf("kubectl top pods -n %s:\n%s", simNS, out)
		}
	})
}

// burnYAML is a Deployment whose pods use 150% of their CPU requests on
// hollow nodes, and its HPA.
const burnYAML = `apiVersion: apps/v1
kind: Deployment
metadata: {name: burn, namespace: NS}
spec:
  replicas: 2
  selector: {matchLabels: {app: burn}}
  template:
    metadata:
      labels: {app: burn}
      annotations: {sim.myriad.io/cpu-usage: 150m}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        resources: {requests: {cpu: 100m}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: burn, namespace: NS}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: burn}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
`

func waitHPA(t *testing.T, c kubernetes.Interface, ns, name string, timeout time.Duration, done func(*autoscalingv2.HorizontalPodAutoscaler) bool) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	var last *autoscalingv2.HorizontalPodAutoscaler
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		h, err := c.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = h
			if done(h) {
				return h
			}
		}
	}
	if last == nil {
		t.Fatalf("hpa %s not found within %v", name, timeout)
	}
	t.Fatalf("hpa %s not done within %v: status %+v", name, timeout, last.Status)
	return nil
}

func findHPACondition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range h.Status.Conditions {
		if h.Status.Conditions[i].Type == t {
			return &h.Status.Conditions[i]
		}
	}
	return nil
}

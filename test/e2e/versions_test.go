package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

const hpaV2YAML = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: versions-e2e}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  - type: Pods
    pods:
      metric: {name: requests-per-second}
      target: {type: AverageValue, averageValue: "100"}
  behavior:
    scaleDown: {stabilizationWindowSeconds: 60}
`

// TestVersionsOverOneStorage: a resource served in two versions is one
// object. An HPA written as autoscaling/v2 reads as v1 (its CPU target as
// targetCPUUtilizationPercentage), and a v1 client writing it back keeps
// what only v2 can say; events written through either events API read
// through the other, watches included; the scheduler's FailedScheduling
// event (written through events.k8s.io) shows in kubectl describe pod.
func TestVersionsOverOneStorage(t *testing.T) {
	const ns = "versions-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()

	t.Run("hpa", func(t *testing.T) {
		shared.mustKubectl(t, hpaV2YAML, "apply", "-f", "-")
		if out := shared.mustKubectl(t, hpaV2YAML, "apply", "-f", "-"); !strings.Contains(out, "unchanged") {
			t.Errorf("second apply: %q", out)
		}
		v1 := shared.mustKubectl(t, "", "get", "horizontalpodautoscalers.v1.autoscaling", "web", "-n", ns, "-o", "json")
		var obj map[string]any
		if err := json.Unmarshal([]byte(v1), &obj); err != nil {
			t.Fatal(err)
		}
		spec := obj["spec"].(map[string]any)
		if obj["apiVersion"] != "autoscaling/v1" || spec["targetCPUUtilizationPercentage"] != 60.0 {
			t.Fatalf("v1 view: apiVersion %v, spec %v", obj["apiVersion"], spec)
		}
		// A v1 client changes what it knows and writes the object back.
		spec["maxReplicas"] = 12
		spec["targetCPUUtilizationPercentage"] = 70
		body, _ := json.Marshal(obj)
		shared.mustKubectl(t, string(body), "replace", "-f", "-")
		got := shared.mustKubectl(t, "", "get", "horizontalpodautoscalers.v2.autoscaling", "web", "-n", ns, "-o",
			`jsonpath={.spec.maxReplicas} {.spec.metrics[?(@.type=="Resource")].resource.target.averageUtilization} {.spec.metrics[?(@.type=="Pods")].pods.metric.name} {.spec.behavior.scaleDown.stabilizationWindowSeconds}`)
		if want := "12 70 requests-per-second 60"; got != want {
			t.Errorf("v2 after a v1 write: %q, want %q", got, want)
		}
		var annotations map[string]string
		if err := json.Unmarshal([]byte(shared.mustKubectl(t, "", "get", "horizontalpodautoscalers.v2.autoscaling", "web", "-n", ns, "-o", "jsonpath={.metadata.annotations}")), &annotations); err != nil {
			t.Fatal(err)
		}
		for k := range annotations {
			if strings.HasPrefix(k, "autoscaling.alpha.kubernetes.io/") {
				t.Errorf("v2 object carries the conversion's annotation %s", k)
			}
		}
		out := shared.mustKubectl(t, "", "get", "hpa", "-n", ns)
		for _, want := range []string{"REFERENCE", "TARGETS", "MINPODS", "Deployment/web", "cpu: <unknown>/70%"} {
			if !strings.Contains(out, want) {
				t.Errorf("get hpa: no %q in\n%s", want, out)
			}
		}
		// Invalid through v1 is refused with v2's field paths, as upstream.
		out, err := shared.kubectl(t, `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: bad, namespace: versions-e2e}
spec: {scaleTargetRef: {kind: Deployment, name: web}, minReplicas: 5, maxReplicas: 3}
`, "create", "-f", "-")
		if err == nil || !strings.Contains(out, "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`") {
			t.Errorf("min > max: %v\n%s", err, out)
		}
		if out := shared.mustKubectl(t, "", "explain", "hpa.spec.metrics", "--api-version=autoscaling/v2"); !strings.Contains(out, "MetricSpec") {
			t.Errorf("explain: %s", out)
		}
	})

	t.Run("events", func(t *testing.T) {
		// A watch through events.k8s.io sees an event created through core.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w, err := shared.client(t).EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		now := time.Now().UTC().Format(time.RFC3339)
		shared.mustKubectl(t, `apiVersion: v1
kind: Event
metadata: {name: legacy, namespace: versions-e2e}
involvedObject: {kind: Pod, name: p1, namespace: versions-e2e}
reason: Started
message: legacy message
type: Normal
source: {component: kubelet, host: n1}
count: 3
firstTimestamp: "`+now+`"
lastTimestamp: "`+now+`"
`, "create", "-f", "-")
		got := shared.mustKubectl(t, "", "get", "events.v1.events.k8s.io", "legacy", "-n", ns, "-o",
			"jsonpath={.regarding.name} {.note} {.deprecatedSource.component} {.deprecatedCount}")
		if want := "p1 legacy message kubelet 3"; got != want {
			t.Errorf("core event read as events.k8s.io: %q, want %q", got, want)
		}
		select {
		case ev := <-w.ResultChan():
			e, ok := ev.Object.(*eventsv1.Event)
			if ev.Type != watch.Added || !ok || e.Name != "legacy" || e.Note != "legacy message" {
				t.Errorf("watch through events.k8s.io: %s %#v", ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Error("watch through events.k8s.io saw nothing")
		}

		shared.mustKubectl(t, `apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: modern, namespace: versions-e2e}
eventTime: "2026-01-02T03:04:05.000000Z"
reportingController: example.com/ctl
reportingInstance: ctl-1
action: Sync
reason: Synced
regarding: {kind: Pod, name: p2, namespace: versions-e2e}
note: modern note
type: Warning
`, "create", "-f", "-")
		got = shared.mustKubectl(t, "", "get", "events.v1.", "modern", "-n", ns, "-o",
			"jsonpath={.involvedObject.name} {.message} {.reportingComponent} {.type}")
		if want := "p2 modern note example.com/ctl Warning"; got != want {
			t.Errorf("events.k8s.io event read as core: %q, want %q", got, want)
		}
		// Field selectors in each API's own names find the same object.
		if got := shared.mustKubectl(t, "", "get", "events.v1.events.k8s.io", "-n", ns, "--field-selector", "regarding.name=p2", "-o", "name"); strings.TrimSpace(got) != "event.events.k8s.io/modern" {
			t.Errorf("regarding.name selector: %q", got)
		}
		if got := shared.mustKubectl(t, "", "get", "events", "-n", ns, "--field-selector", "involvedObject.name=p2", "-o", "name"); strings.TrimSpace(got) != "event/modern" {
			t.Errorf("involvedObject.name selector: %q", got)
		}
	})

	t.Run("describe shows FailedScheduling", func(t *testing.T) {
		shared.mustKubectl(t, `apiVersion: v1
kind: Pod
metadata: {name: huge, namespace: versions-e2e}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "100000"}}
`, "create", "-f", "-")
		var out string
		waitFor(t, 30*time.Second, func() bool {
			out = shared.mustKubectl(t, "", "describe", "pod", "huge", "-n", ns)
			return strings.Contains(out, "FailedScheduling")
		})
		if !strings.Contains(out, "default-scheduler") {
			t.Errorf("describe pod: no scheduler event source in\n%s", out)
		}
	})
}

package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// rcYAML has no selector and no labels: both default to the template's.
const rcYAML = `apiVersion: v1
kind: ReplicationController
metadata:
  name: web
  namespace: rc-e2e
spec:
  replicas: 3
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.27
`

// TestLegacyCoreAPI runs core/v1's older resources through a real `myriad
// up` with hollow nodes: ReplicationControllers (the RC controller, the
// ReplicaSet sync over RCs, creates pods that run; kubectl scales through
// the scale subresource; orphaning and cascading deletion go through the
// garbage collector), componentstatuses reporting the control plane
// healthy, and the top-level bindings resource binding a pod.
func TestLegacyCoreAPI(t *testing.T) {
	srv, _ := startWithHollowNodes(t, "rc", 3, nil)

	c := srv.client(t)
	ctx := context.Background()
	const ns = "rc-e2e"
	srv.mustKubectl(t, "", "create", "namespace", ns)

	t.Run("create runs pods on hollow nodes", func(t *testing.T) {
		if out := srv.mustKubectl(t, rcYAML, "create", "-f", "-"); !strings.Contains(out, "replicationcontroller/web created") {
			t.Fatalf("create: %s", out)
		}
		rc, err := c.CoreV1().ReplicationControllers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Fatalf("defaults: selector %v labels %v template %+v", rc.Spec.Selector, rc.Labels, rc.Spec.Template.Spec)
		}
		waitRC(t, c, ns, "web", 3)
		for _, p := range rcPods(t, c, ns, "app=web") {
			ref := metav1.GetControllerOf(&p)
			if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID {
				t.Errorf("pod %s: controller %+v", p.Name, ref)
			}
			if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: node %q phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
	})

	t.Run("get shows upstream's columns", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "-n", ns, "get", "rc")
		if h, row := strings.Fields(firstLine(out)), strings.Fields(secondLine(out)); strings.Join(h, " ") != "NAME DESIRED CURRENT READY AGE" ||
			len(row) != 5 || strings.Join(row[:4], " ") != "web 3 3 3" {
			t.Errorf("get rc:\n%s", out)
		}
		out = srv.mustKubectl(t, "", "-n", ns, "get", "replicationcontrollers", "-o", "wide")
		if h, row := strings.Fields(firstLine(out)), strings.Fields(secondLine(out)); strings.Join(h, " ") != "NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR" ||
			len(row) != 8 || strings.Join(row[5:], " ") != "web nginx:1.27 app=web" {
			t.Errorf("get rc -o wide:\n%s", out)
		}
		if out := srv.mustKubectl(t, "", "-n", ns, "get", "all", "-o", "name"); !strings.Contains(out, "replicationcontroller/web") {
			t.Errorf("get all lacks the RC:\n%s", out)
		}
		// describe finds the pods by selector and the controller's events
		// by the RC's UID.
		waitFor(t, 20*time.Second, func() bool {
			out := srv.mustKubectl(t, "", "-n", ns, "describe", "rc", "web")
			return strings.Contains(out, "3 current / 3 desired") && strings.Contains(out, "3 Running") &&
				strings.Contains(out, "SuccessfulCreate") && strings.Contains(out, "replication-controller")
		})
	})

	t.Run("scale through the scale subresource", func(t *testing.T) {
		if out := srv.mustKubectl(t, "", "-n", ns, "scale", "rc", "web", "--replicas=5"); !strings.Contains(out, "replicationcontroller/web scaled") {
			t.Fatalf("scale: %s", out)
		}
		waitRC(t, c, ns, "web", 5)
		raw := srv.mustKubectl(t, "", "get", "--raw", "/api/v1/namespaces/"+ns+"/replicationcontrollers/web/scale")
		var sc autoscalingv1.Scale
		if err := json.Unmarshal([]byte(raw), &sc); err != nil || sc.Kind != "Scale" || sc.Spec.Replicas != 5 || sc.Status.Replicas != 5 || sc.Status.Selector != "app=web" {
			t.Errorf("scale: %v %s", err, raw)
		}
		if out := srv.mustKubectl(t, "", "-n", ns, "get", "rc", "--field-selector", "status.replicas=5", "-o", "name"); strings.TrimSpace(out) != "replicationcontroller/web" {
			t.Errorf("field selector status.replicas=5: %q", out)
		}
	})

	t.Run("invalid controllers are refused with field paths", func(t *testing.T) {
		bad := strings.NewReplacer("name: web", "name: bad", "replicas: 3", "replicas: 1\n  selector: {app: other}").Replace(rcYAML)
		out, err := srv.kubectl(t, bad, "create", "-f", "-")
		if err == nil || !strings.Contains(out, "is invalid") || !strings.Contains(out, "spec.template.metadata.labels: Invalid value") {
			t.Errorf("selector not matching the template: %v %s", err, out)
		}
	})

	t.Run("explain", func(t *testing.T) {
		out := srv.mustKubectl(t, "", "explain", "rc.spec")
		if !strings.Contains(out, "ReplicationController") || !strings.Contains(out, "selector") || !strings.Contains(out, "template") {
			t.Errorf("explain rc.spec:\n%s", out)
		}
		if out := srv.mustKubectl(t, "", "explain", "cs.conditions"); !strings.Contains(out, "ComponentStatus") || !strings.Contains(out, "status") {
			t.Errorf("explain cs.conditions:\n%s", out)
		}
		out = srv.mustKubectl(t, "", "api-resources", "--api-group=")
		for _, want := range []string{"bindings v1 true Binding", "componentstatuses cs v1 false ComponentStatus", "replicationcontrollers rc v1 true ReplicationController"} {
			found := false
			for _, l := range strings.Split(out, "\n") {
				found = found || strings.Join(strings.Fields(l), " ") == want
			}
			if !found {
				t.Errorf("api-resources lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("orphaning delete keeps the pods without owner", func(t *testing.T) {
		srv.mustKubectl(t, "", "-n", ns, "delete", "rc", "web", "--cascade=orphan", "--timeout=30s")
		if out, err := srv.kubectl(t, "", "-n", ns, "get", "rc", "web"); err == nil || !strings.Contains(out, "NotFound") {
			t.Fatalf("rc still there: %v %s", err, out)
		}
		pods := rcPods(t, c, ns, "app=web")
		if len(pods) != 5 {
			t.Errorf("%d pods after orphaning, want 5", len(pods))
		}
		for _, p := range pods {
			if len(p.OwnerReferences) != 0 || p.DeletionTimestamp != nil {
				t.Errorf("pod %s: owners %+v deleting %v", p.Name, p.OwnerReferences, p.DeletionTimestamp)
			}
		}
	})

	t.Run("a delete without options orphans, as upstream's v1 default", func(t *testing.T) {
		plain := strings.NewReplacer("name: web", "name: plain", "app: web", "app: plain", "replicas: 3", "replicas: 1").Replace(rcYAML)
		srv.mustKubectl(t, plain, "create", "-f", "-")
		waitRC(t, c, ns, "plain", 1)
		if err := c.CoreV1().ReplicationControllers(ns).Delete(ctx, "plain", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 30*time.Second, func() bool {
			_, err := c.CoreV1().ReplicationControllers(ns).Get(ctx, "plain", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		pods := rcPods(t, c, ns, "app=plain")
		if len(pods) != 1 || len(pods[0].OwnerReferences) != 0 {
			t.Errorf("pods after a plain delete: %+v", pods)
		}
	})

	t.Run("cascading delete deletes the pods", func(t *testing.T) {
		other := strings.NewReplacer("name: web", "name: db", "app: web", "app: db", "replicas: 3", "replicas: 2").Replace(rcYAML)
		srv.mustKubectl(t, other, "create", "-f", "-")
		waitRC(t, c, ns, "db", 2)
		srv.mustKubectl(t, "", "-n", ns, "delete", "rc", "db")
		waitFor(t, 60*time.Second, func() bool { return len(rcPods(t, c, ns, "app=db")) == 0 })
		// The orphans of the first controller are untouched.
		if n := len(rcPods(t, c, ns, "app=web")); n != 5 {
			t.Errorf("%d orphaned web pods, want 5", n)
		}
	})

	t.Run("componentstatuses", func(t *testing.T) {
		var out string
		waitFor(t, 30*time.Second, func() bool {
			out = srv.mustKubectl(t, "", "get", "cs")
			return strings.Count(out, "Healthy") == 3 && !strings.Contains(out, "Unhealthy")
		})
		if !strings.Contains(out, "v1 ComponentStatus is deprecated in v1.19+") {
			t.Errorf("no deprecation warning:\n%s", out)
		}
		lines := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				lines[f[0]] = strings.Join(f, " ")
			}
		}
		for _, want := range []string{"NAME STATUS MESSAGE ERROR", "scheduler Healthy ok", "controller-manager Healthy ok", "etcd-0 Healthy ok"} {
			if lines[strings.Fields(want)[0]] != want {
				t.Errorf("want line %q in\n%s", want, out)
			}
		}
		if out, err := srv.kubectl(t, "", "delete", "cs", "etcd-0"); err == nil || !strings.Contains(out, "MethodNotAllowed") {
			t.Errorf("delete cs: %v %s", err, out)
		}
	})

	t.Run("bindings binds the pod the body names", func(t *testing.T) {
		// No scheduler by that name: the pod waits for the Binding.
		pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: manual\n  namespace: rc-e2e\nspec:\n  schedulerName: nobody\n  containers:\n  - name: c\n    image: nginx:1.27\n"
		srv.mustKubectl(t, pod, "create", "-f", "-")
		node := strings.TrimPrefix(strings.Fields(srv.mustKubectl(t, "", "get", "nodes", "-o", "name"))[0], "node/")
		binding := "apiVersion: v1\nkind: Binding\nmetadata:\n  name: manual\n  namespace: rc-e2e\ntarget:\n  kind: Node\n  name: " + node + "\n"
		// kubectl finds no PATCH operation for Binding (none upstream
		// either), so its field-validation probe asks whether Binding is a
		// CRD, and CRDs are not served yet: validate on the server only.
		// The answer is upstream's Status, which kubectl names
		// "status/<unknown>".
		if out := srv.mustKubectl(t, binding, "create", "--validate=false", "-f", "-"); !strings.Contains(out, "created") {
			t.Errorf("create binding: %s", out)
		}
		waitFor(t, 30*time.Second, func() bool {
			p, err := c.CoreV1().Pods(ns).Get(ctx, "manual", metav1.GetOptions{})
			return err == nil && p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning
		})
		if out, err := srv.kubectl(t, binding, "create", "--validate=false", "-f", "-"); err == nil || !strings.Contains(out, "already assigned") {
			t.Errorf("second binding: %v %s", err, out)
		}
	})
}

// waitRC waits until the controller reports n ready replicas for the
// current generation.
func waitRC(t *testing.T, c kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	var rc *corev1.ReplicationController
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var err error
		rc, err = c.CoreV1().ReplicationControllers(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st := rc.Status; st.ObservedGeneration == rc.Generation && st.Replicas == n && st.ReadyReplicas == n && st.AvailableReplicas == n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("rc %s never had %d ready replicas: status %+v", name, n, rc.Status)
}

// rcPods lists the pods matching selector that are not terminating.
func rcPods(t *testing.T, c kubernetes.Interface, ns, selector string) []corev1.Pod {
	t.Helper()
	l, err := c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const deploymentYAML = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: kubectl-e2e
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
`

func TestKubectlWorkflow(t *testing.T) {
	s := shared
	// Names unique to this run, so the test can run again on the same
	// server (go test -count=2).
	run := runSuffix()
	ns := "kubectl-e2e-" + run
	deployYAML := strings.Replace(deploymentYAML, "namespace: kubectl-e2e", "namespace: "+ns, 1)
	// A fresh server has the namespaces every client assumes.
	s.mustKubectl(t, "", "get", "namespace", "default", "kube-system", "kube-public", "kube-node-lease")
	s.mustKubectl(t, "", "create", "configmap", "in-default-"+run, "--from-literal=k=v")
	s.mustKubectl(t, "", "create", "namespace", ns)

	t.Run("apply twice", func(t *testing.T) {
		out := s.mustKubectl(t, deployYAML, "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web created") {
			t.Fatalf("first apply: %s", out)
		}
		out = s.mustKubectl(t, deployYAML, "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web unchanged") {
			t.Fatalf("second apply: %s", out)
		}
		changed := strings.Replace(deployYAML, "nginx:1.27", "nginx:1.28", 1)
		out = s.mustKubectl(t, changed, "apply", "-f", "-")
		if !strings.Contains(out, "deployment.apps/web configured") {
			t.Fatalf("third apply: %s", out)
		}
		img := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image} {.metadata.generation}")
		if img != "nginx:1.28 2" {
			t.Fatalf("after apply: image and generation %q, want \"nginx:1.28 2\"", img)
		}
	})

	t.Run("server-side apply", func(t *testing.T) {
		cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: " + ns + "\ndata:\n  a: \"1\"\n"
		s.mustKubectl(t, cm, "apply", "--server-side", "-f", "-")
		out := s.mustKubectl(t, "", "-n", ns, "get", "cm", "ssa", "-o", "json", "--show-managed-fields")
		if !strings.Contains(out, `"manager": "kubectl"`) || !strings.Contains(out, `"operation": "Apply"`) {
			t.Fatalf("managedFields missing the kubectl Apply entry:\n%s", out)
		}
		// A second manager changing the same field conflicts without --force-conflicts.
		cm2 := strings.Replace(cm, `a: "1"`, `a: "2"`, 1)
		if out, err := s.kubectl(t, cm2, "apply", "--server-side", "--field-manager", "other", "-f", "-"); err == nil || !strings.Contains(out, "conflict") {
			t.Fatalf("expected a conflict, got err=%v:\n%s", err, out)
		}
		s.mustKubectl(t, cm2, "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-")
		if v := s.mustKubectl(t, "", "-n", ns, "get", "cm", "ssa", "-o", "jsonpath={.data.a}"); v != "2" {
			t.Fatalf("data.a = %q after forced apply", v)
		}
	})

	t.Run("get formats", func(t *testing.T) {
		out := s.mustKubectl(t, "", "-n", ns, "get", "deploy")
		for _, col := range []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "web"} {
			if !strings.Contains(out, col) {
				t.Fatalf("get deploy lacks %q:\n%s", col, out)
			}
		}
		out = s.mustKubectl(t, "", "-n", ns, "get", "deploy", "-o", "wide")
		if !strings.Contains(out, "nginx:1.28") || !strings.Contains(out, "app=web") {
			t.Fatalf("get -o wide lacks images/selector:\n%s", out)
		}
		out = s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "yaml")
		if !strings.Contains(out, "kind: Deployment") || !strings.Contains(out, "resourceVersion:") {
			t.Fatalf("get -o yaml:\n%s", out)
		}
		var obj map[string]interface{}
		if err := json.Unmarshal([]byte(s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "json")), &obj); err != nil {
			t.Fatalf("get -o json is not JSON: %v", err)
		}
		if obj["kind"] != "Deployment" {
			t.Fatalf("kind = %v", obj["kind"])
		}
	})

	t.Run("patch types", func(t *testing.T) {
		for _, tc := range []struct{ typ, patch, want string }{
			{"merge", `{"metadata":{"labels":{"p":"merge"}}}`, "merge"},
			{"strategic", `{"metadata":{"labels":{"p":"strategic"}}}`, "strategic"},
			{"json", `[{"op":"replace","path":"/metadata/labels/p","value":"json"}]`, "json"},
		} {
			s.mustKubectl(t, "", "-n", ns, "patch", "deploy", "web", "--type", tc.typ, "-p", tc.patch)
			if got := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "jsonpath={.metadata.labels.p}"); got != tc.want {
				t.Fatalf("%s patch: label p = %q, want %q", tc.typ, got, tc.want)
			}
		}
		// Strategic merge on a list merges by key: the container survives.
		s.mustKubectl(t, "", "-n", ns, "patch", "deploy", "web", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}`)
		names := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}")
		if names != "sidecar nginx" && names != "nginx sidecar" {
			t.Fatalf("containers after strategic patch: %q", names)
		}
	})

	t.Run("scale label annotate", func(t *testing.T) {
		s.mustKubectl(t, "", "-n", ns, "scale", "deploy", "web", "--replicas", "5")
		if got := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); got != "5" {
			t.Fatalf("replicas after scale = %q", got)
		}
		s.mustKubectl(t, "", "-n", ns, "label", "deploy", "web", "tier=front")
		s.mustKubectl(t, "", "-n", ns, "annotate", "deploy", "web", "note=hello")
		out := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "-l", "tier=front", "-o", "jsonpath={.items[*].metadata.annotations.note}")
		if out != "hello" {
			t.Fatalf("label selector/annotation: %q", out)
		}
		if out := s.mustKubectl(t, "", "-n", ns, "get", "deploy", "-l", "tier=back", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Fatalf("selector tier=back matched: %q", out)
		}
	})

	t.Run("discovery and explain", func(t *testing.T) {
		out := s.mustKubectl(t, "", "api-resources")
		for _, want := range []string{"pods", "po", "deployments", "deploy", "leases", "apps/v1", "coordination.k8s.io/v1"} {
			if !strings.Contains(out, want) {
				t.Fatalf("api-resources lacks %q:\n%s", want, out)
			}
		}
		out = s.mustKubectl(t, "", "explain", "pods.spec.containers")
		if !strings.Contains(out, "FIELD") && !strings.Contains(out, "image") {
			t.Fatalf("explain:\n%s", out)
		}
		if !strings.Contains(out, "image") {
			t.Fatalf("explain pods.spec.containers lacks image:\n%s", out)
		}
		out = s.mustKubectl(t, "", "-n", ns, "get", "po,deploy,all")
		if !strings.Contains(out, "deployment.apps/web") {
			t.Fatalf("get po,deploy,all:\n%s", out)
		}
	})

	t.Run("get -w sees changes", func(t *testing.T) {
		cmd := exec.Command("kubectl", "--kubeconfig", s.kubeconfig, "-n", ns, "get", "cm", "-w", "--output-watch-events")
		var out safeBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		waitFor(t, 20*time.Second, func() bool { return strings.Contains(out.String(), "ssa") })
		s.mustKubectl(t, "", "-n", ns, "create", "configmap", "watched", "--from-literal=k=v")
		waitFor(t, 20*time.Second, func() bool { return strings.Contains(out.String(), "watched") })
		s.mustKubectl(t, "", "-n", ns, "delete", "configmap", "watched")
		waitFor(t, 20*time.Second, func() bool { return strings.Contains(out.String(), "DELETED") })
	})

	t.Run("wait for condition", func(t *testing.T) {
		name := "wait-node-" + run
		node := "apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name + "\nstatus:\n  conditions:\n  - type: Ready\n    status: \"True\"\n    reason: KubeletReady\n"
		s.mustKubectl(t, node, "create", "-f", "-")
		// No kubelet heartbeats for it: remove it before the node lifecycle
		// controller finds it late and other tests' pods are scheduled to it.
		t.Cleanup(func() { s.mustKubectl(t, "", "delete", "node", name) })
		// Status is cleared on create (status subresource), so set it there.
		s.mustKubectl(t, "", "patch", "node", name, "--subresource=status", "--type=merge", "-p", `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}}`)
		s.mustKubectl(t, "", "wait", "--for=condition=Ready", "node/"+name, "--timeout=20s")
	})

	t.Run("admission's additions owned by no manager", func(t *testing.T) {
		// The ReplicaSet's pods get their ServiceAccount token volume from
		// admission, after their managed fields are recorded (upstream's
		// order): the volume is in the pod but in no manager's fields.
		var pod struct {
			Metadata struct {
				ManagedFields []struct {
					Manager  string          `json:"manager"`
					FieldsV1 json.RawMessage `json:"fieldsV1"`
				} `json:"managedFields"`
			} `json:"metadata"`
			Spec struct {
				Volumes []struct {
					Name string `json:"name"`
				} `json:"volumes"`
			} `json:"spec"`
		}
		waitFor(t, 60*time.Second, func() bool {
			out, err := s.kubectl(t, "", "-n", ns, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
			return err == nil && strings.TrimSpace(out) != ""
		})
		name := s.mustKubectl(t, "", "-n", ns, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[0].metadata.name}")
		out := s.mustKubectl(t, "", "-n", ns, "get", "pod", strings.TrimSpace(name), "-o", "json", "--show-managed-fields")
		if err := json.Unmarshal([]byte(out), &pod); err != nil {
			t.Fatalf("pod: %v\n%s", err, out)
		}
		if len(pod.Spec.Volumes) == 0 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, "kube-api-access-") {
			t.Fatalf("pod has no token volume: %s", out)
		}
		if len(pod.Metadata.ManagedFields) == 0 {
			t.Fatalf("pod has no managedFields: %s", out)
		}
		for _, e := range pod.Metadata.ManagedFields {
			if strings.Contains(string(e.FieldsV1), "kube-api-access") {
				t.Errorf("manager %s owns the token volume: %s", e.Manager, e.FieldsV1)
			}
		}
	})

	t.Run("delete and cascade", func(t *testing.T) {
		s.mustKubectl(t, "", "-n", ns, "delete", "configmap", "ssa")
		if out, err := s.kubectl(t, "", "-n", ns, "get", "configmap", "ssa"); err == nil || !strings.Contains(out, "NotFound") {
			t.Fatalf("configmap still there: %v %s", err, out)
		}
		// `myriad up` runs the controllers: the Deployment has a ReplicaSet,
		// and orphan propagation leaves it, without its owner reference,
		// once the garbage collector has removed the orphan finalizer.
		waitFor(t, 30*time.Second, func() bool {
			out, _ := s.kubectl(t, "", "-n", ns, "get", "rs", "-l", "app=web", "-o", "name")
			return strings.Contains(out, "replicaset")
		})
		s.mustKubectl(t, "", "-n", ns, "delete", "deploy", "web", "--cascade=orphan", "--timeout=30s")
		if out, err := s.kubectl(t, "", "-n", ns, "get", "deploy", "web"); err == nil || !strings.Contains(out, "NotFound") {
			t.Fatalf("deployment still there: %v %s", err, out)
		}
		out := s.mustKubectl(t, "", "-n", ns, "get", "rs", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.ownerReferences}")
		if strings.TrimSpace(out) != "" {
			t.Fatalf("orphaned ReplicaSet still has owner references: %q", out)
		}
	})
}

func waitFor(t *testing.T, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

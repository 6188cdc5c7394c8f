package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// quotaPod is a pod of one container named app, with a cpu request when
// cpu is not empty.
func quotaPod(ns, name, cpu string) string {
	res := "{}"
	if cpu != "" {
		res = fmt.Sprintf("{requests: {cpu: %q}}", cpu)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s}
spec:
  containers:
  - {name: app, image: busybox:1.36, resources: %s}
`, name, ns, res)
}

// waitJSONPath polls kubectl get ... -o jsonpath until it prints want.
func waitJSONPath(t *testing.T, want string, args ...string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := shared.kubectl(t, "", args...)
		if got = strings.TrimSpace(out); err == nil && got == want {
			return
		}
	}
	t.Fatalf("kubectl %s: got %q, want %q", strings.Join(args, " "), got, want)
}

// mustFail runs kubectl, which must fail with a message containing want.
func mustFail(t *testing.T, stdin, want string, args ...string) {
	t.Helper()
	out, err := shared.kubectl(t, stdin, args...)
	if err == nil {
		t.Fatalf("kubectl %s succeeded: %s", strings.Join(args, " "), out)
	}
	if !strings.Contains(out, want) {
		t.Fatalf("kubectl %s: got %q, want it to contain %q", strings.Join(args, " "), out, want)
	}
}

// TestResourceQuota creates a quota with kubectl, watches the controller
// count it, fills it with pods and checks that admission refuses the pod
// too many and the pod that does not request cpu, with upstream's
// messages; a deleted pod gives its share back; count/<resource>.<group>
// works for a resource with no evaluator of its own; ConfigMaps and
// Secrets are counted and given back.
func TestResourceQuota(t *testing.T) {
	const ns = "quota-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()

	shared.mustKubectl(t, "", "-n", ns, "create", "quota", "q", "--hard=pods=2,requests.cpu=1")
	waitJSONPath(t, "0", "-n", ns, "get", "quota", "q", "-o", "jsonpath={.status.used.pods}")

	shared.mustKubectl(t, quotaPod(ns, "p1", "100m"), "create", "-f", "-")
	// Creating a pod that exists is refused after quota admission charged
	// it; the charge is given back (or p3's message below would say 3).
	mustFail(t, quotaPod(ns, "p1", "100m"), `pods "p1" already exists`, "create", "-f", "-")
	shared.mustKubectl(t, quotaPod(ns, "p2", "300m"), "create", "-f", "-")
	out := shared.mustKubectl(t, "", "-n", ns, "describe", "quota", "q")
	for _, row := range [][]string{{"Resource", "Used", "Hard"}, {"pods", "2", "2"}, {"requests.cpu", "400m", "1"}} {
		if !hasRow(out, row) {
			t.Errorf("describe quota lacks row %q:\n%s", row, out)
		}
	}
	mustFail(t, quotaPod(ns, "p3", "100m"),
		`pods "p3" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`, "create", "-f", "-")

	// A deleted pod gives its share back.
	shared.mustKubectl(t, "", "-n", ns, "delete", "pod", "p2", "--grace-period=0", "--force")
	waitJSONPath(t, "1", "-n", ns, "get", "quota", "q", "-o", "jsonpath={.status.used.pods}")
	mustFail(t, quotaPod(ns, "noreq", ""),
		`pods "noreq" is forbidden: failed quota: q: must specify requests.cpu for: app`, "create", "-f", "-")
	mustFail(t, quotaPod(ns, "big", "1"),
		`pods "big" is forbidden: exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=100m, limited: requests.cpu=1`, "create", "-f", "-")
	shared.mustKubectl(t, quotaPod(ns, "p4", "900m"), "create", "-f", "-")
	waitJSONPath(t, "1", "-n", ns, "get", "quota", "q", "-o", "jsonpath={.status.used.requests\\.cpu}")

	// count/<resource>.<group> of a resource quota has no evaluator for.
	shared.mustKubectl(t, "", "-n", ns, "create", "quota", "deploys", "--hard=count/deployments.apps=1")
	waitJSONPath(t, "0", "-n", ns, "get", "quota", "deploys", "-o", "jsonpath={.status.used.count/deployments\\.apps}")
	shared.mustKubectl(t, "", "-n", ns, "create", "deployment", "d1", "--image=busybox:1.36", "--replicas=0")
	mustFail(t, "", "exceeded quota: deploys, requested: count/deployments.apps=1, used: count/deployments.apps=1, limited: count/deployments.apps=1",
		"-n", ns, "create", "deployment", "d2", "--image=busybox:1.36", "--replicas=0")
	shared.mustKubectl(t, "", "-n", ns, "delete", "deployment", "d1")
	waitJSONPath(t, "0", "-n", ns, "get", "quota", "deploys", "-o", "jsonpath={.status.used.count/deployments\\.apps}")

	// ConfigMaps and Secrets by their legacy names, counted from metadata
	// alone (the namespace's kube-root-ca.crt is one of its ConfigMaps).
	shared.mustKubectl(t, "", "-n", ns, "create", "quota", "objects", "--hard=configmaps=2,secrets=1")
	waitJSONPath(t, "1", "-n", ns, "get", "quota", "objects", "-o", "jsonpath={.status.used.configmaps}")
	waitJSONPath(t, "0", "-n", ns, "get", "quota", "objects", "-o", "jsonpath={.status.used.secrets}")
	shared.mustKubectl(t, "", "-n", ns, "create", "configmap", "cm1", "--from-literal=k=v")
	mustFail(t, "", "exceeded quota: objects, requested: configmaps=1, used: configmaps=2, limited: configmaps=2",
		"-n", ns, "create", "configmap", "cm2")
	shared.mustKubectl(t, "", "-n", ns, "create", "secret", "generic", "s1", "--from-literal=k=v")
	mustFail(t, "", "exceeded quota: objects, requested: secrets=1, used: secrets=1, limited: secrets=1",
		"-n", ns, "create", "secret", "generic", "s2")
	shared.mustKubectl(t, "", "-n", ns, "delete", "configmap", "cm1")
	shared.mustKubectl(t, "", "-n", ns, "delete", "secret", "s1")
	waitJSONPath(t, "1", "-n", ns, "get", "quota", "objects", "-o", "jsonpath={.status.used.configmaps}")
	waitJSONPath(t, "0", "-n", ns, "get", "quota", "objects", "-o", "jsonpath={.status.used.secrets}")
}

// hasRow reports whether some line of out has exactly the fields want.
func hasRow(out string, want []string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}

const limitRangeYAML = `apiVersion: v1
kind: LimitRange
metadata: {name: cpu, namespace: limits-e2e}
spec:
  limits:
  - type: Container
    default: {cpu: 500m}
    defaultRequest: {cpu: 200m}
    min: {cpu: 100m}
    max: {cpu: "1"}
`

// TestLimitRange creates a LimitRange with kubectl; a pod without
// resources gets its defaults, pods outside its min and max are refused
// with upstream's messages.
func TestLimitRange(t *testing.T) {
	const ns = "limits-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()
	shared.mustKubectl(t, limitRangeYAML, "create", "-f", "-")
	// The plugin reads the watch cache: wait for it to hold the range.
	waitJSONPath(t, "cpu", "-n", ns, "get", "limitranges", "-o", "jsonpath={.items[*].metadata.name}")

	shared.mustKubectl(t, quotaPod(ns, "plain", ""), "create", "-f", "-")
	got := shared.mustKubectl(t, "", "-n", ns, "get", "pod", "plain", "-o",
		`jsonpath={.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.limits.cpu} {.status.qosClass} {.metadata.annotations.kubernetes\.io/limit-ranger}`)
	if want := "200m 500m Burstable LimitRanger plugin set: cpu request for container app; cpu limit for container app"; got != want {
		t.Errorf("defaulted pod: got %q, want %q", got, want)
	}
	mustFail(t, quotaPod(ns, "small", "50m"),
		`pods "small" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`, "create", "-f", "-")
	over := strings.Replace(quotaPod(ns, "over", ""), "resources: {}", `resources: {limits: {cpu: "2"}}`, 1)
	mustFail(t, over, `pods "over" is forbidden: maximum cpu usage per Container is 1, but limit is 2`, "create", "-f", "-")
}

package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// controllerRevisionYAML is a revision whose controller is a ConfigMap: a
// real owner, so the garbage collector leaves the revision alone, and
// still a controller reference for the Controller column.
const controllerRevisionYAML = `apiVersion: apps/v1
kind: ControllerRevision
metadata:
  name: web-1
  namespace: controllerrevisions-e2e
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: owner
    uid: %s
    controller: true
data:
  spec:
    template:
      spec:
        containers:
        - name: web
          image: nginx:1.27
revision: 1
`

// TestControllerRevisions creates a ControllerRevision with kubectl, reads
// it back in upstream's columns, and checks that data is immutable while
// revision is not.
func TestControllerRevisions(t *testing.T) {
	const ns = "controllerrevisions-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()

	shared.mustKubectl(t, "", "create", "configmap", "owner", "-n", ns)
	uid := shared.mustKubectl(t, "", "get", "configmap", "owner", "-n", ns, "-o", "jsonpath={.metadata.uid}")
	if out := shared.mustKubectl(t, fmt.Sprintf(controllerRevisionYAML, uid), "create", "-f", "-"); !strings.Contains(out, "controllerrevision.apps/web-1 created") {
		t.Errorf("create: %q", out)
	}
	out := shared.mustKubectl(t, "", "get", "controllerrevisions", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("get controllerrevisions: want a header and one row, got\n%s", out)
	}
	cases := []struct {
		name string
		line string
		want []string
	}{
		{"header", lines[0], []string{"NAME", "CONTROLLER", "REVISION", "AGE"}},
		{"row", lines[1], []string{"web-1", "configmap/owner", "1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Fields(tc.line)
			if len(got) > len(tc.want) && tc.name == "row" {
				got = got[:len(tc.want)] // drop the age
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	// Revision may change; data may not (upstream's 422, "field is immutable").
	shared.mustKubectl(t, "", "patch", "controllerrevision", "web-1", "-n", ns, "--type=merge", "-p", `{"revision":2}`)
	if got := shared.mustKubectl(t, "", "get", "controllerrevision", "web-1", "-n", ns, "-o", "jsonpath={.revision}"); got != "2" {
		t.Errorf("revision after patch %q, want 2", got)
	}
	out, err := shared.kubectl(t, "", "patch", "controllerrevision", "web-1", "-n", ns, "--type=merge", "-p", `{"data":{"spec":null}}`)
	if err == nil {
		t.Fatalf("patch of data succeeded: %s", out)
	}
	// kubectl renders only a 422 Invalid status as "<Kind> <name> is invalid".
	for _, want := range []string{`The ControllerRevision "web-1" is invalid`, "data: Invalid value", "field is immutable"} {
		if !strings.Contains(out, want) {
			t.Errorf("patch of data: got %q, want it to contain %q", out, want)
		}
	}

	// The OpenAPI served for the group has the kind's definitions.
	if out := shared.mustKubectl(t, "", "explain", "controllerrevisions.revision"); !strings.Contains(out, "KIND:       ControllerRevision") {
		t.Errorf("explain: %q", out)
	}

	shared.mustKubectl(t, "", "delete", "controllerrevision", "web-1", "-n", ns)
	if out, err := shared.kubectl(t, "", "get", "controllerrevision", "web-1", "-n", ns); err == nil || !strings.Contains(out, "NotFound") {
		t.Errorf("get after delete: err %v, out %q", err, out)
	}
}

package e2e

import (
	"strings"
	"testing"
)

const podTemplateYAML = `apiVersion: v1
kind: PodTemplate
metadata:
  name: web
  namespace: podtemplates-e2e
template:
  metadata:
    labels: {app: web, tier: front}
  spec:
    containers:
    - name: web
      image: nginx:1.27
    - name: log
      image: busybox:1.36
`

// TestPodTemplates creates a PodTemplate with kubectl and reads it back in
// upstream's table columns, and checks that an unknown subresource is
// upstream's path-level 404, not a NotFound about the pod.
func TestPodTemplates(t *testing.T) {
	const ns = "podtemplates-e2e"
	shared.mustKubectl(t, "", "create", "namespace", ns)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", ns, "--wait=false") }()

	if out := shared.mustKubectl(t, podTemplateYAML, "create", "-f", "-"); !strings.Contains(out, "podtemplate/web created") {
		t.Errorf("create: %q", out)
	}
	out := shared.mustKubectl(t, "", "get", "podtemplates", "-n", ns)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("get podtemplates: want a header and one row, got\n%s", out)
	}
	cases := []struct {
		name string
		line string
		want []string
	}{
		{"header", lines[0], []string{"NAME", "CONTAINERS", "IMAGES", "POD", "LABELS"}},
		{"row", lines[1], []string{"web", "web,log", "nginx:1.27,busybox:1.36", "app=web,tier=front"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Fields(tc.line); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// The template's spec was defaulted like a pod's.
	if got := shared.mustKubectl(t, "", "get", "podtemplate", "web", "-n", ns, "-o", "jsonpath={.template.spec.restartPolicy}"); got != "Always" {
		t.Errorf("template restartPolicy %q, want Always", got)
	}

	out, err := shared.kubectl(t, "", "get", "--raw", "/api/v1/namespaces/default/pods/x/bogus")
	if err == nil {
		t.Fatalf("get --raw of an unknown subresource succeeded: %s", out)
	}
	if want := "Error from server (NotFound): the server could not find the requested resource"; !strings.Contains(out, want) {
		t.Errorf("unknown subresource: got %q, want %q", out, want)
	}

	shared.mustKubectl(t, "", "delete", "podtemplate", "web", "-n", ns)
}

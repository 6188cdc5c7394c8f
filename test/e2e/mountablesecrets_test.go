package e2e

import (
	"strings"
	"testing"
)

// TestEnforceMountableSecrets: under a ServiceAccount annotated
// kubernetes.io/enforce-mountable-secrets, kubectl can create a pod using
// a Secret the account lists and gets upstream's 403 for one it does not.
func TestEnforceMountableSecrets(t *testing.T) {
	s := shared
	const ns = "mountable"
	s.mustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	s.mustKubectl(t, `apiVersion: v1
kind: ServiceAccount
metadata:
  name: strict
  annotations:
    kubernetes.io/enforce-mountable-secrets: "true"
secrets:
- name: allowed
`, "-n", ns, "apply", "-f", "-")
	pod := func(name, secret string) string {
		return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  serviceAccountName: strict
  containers:
  - name: app
    image: busybox
    env:
    - name: PASSWORD
      valueFrom:
        secretKeyRef: {name: ` + secret + `, key: password}
`
	}
	s.mustKubectl(t, pod("ok", "allowed"), "-n", ns, "create", "-f", "-")
	out, err := s.kubectl(t, pod("refused", "other"), "-n", ns, "create", "-f", "-")
	want := `pods "refused" is forbidden: container app with envVar PASSWORD referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("create with an unlisted secret: %v\n%s\nwant %q", err, out, want)
	}
}

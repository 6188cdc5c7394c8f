package e2e

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/myriad-k8s/myriad/internal/storage/embedded"
)

// TestPodSecurityKubectl: Pod Security admission as a user meets it
// through kubectl on the shared `myriad up`.
func TestPodSecurityKubectl(t *testing.T) {
	s := shared
	s.mustKubectl(t, "", "create", "namespace", "pss-strict")
	s.mustKubectl(t, "", "create", "namespace", "pss-warn")
	t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "namespace", "pss-strict", "pss-warn", "--wait=false") })

	// A pod admitted before the namespace is restricted: tightening the
	// label warns about it.
	s.mustKubectl(t, "", "run", "old", "-n", "pss-strict", "--image=busybox", "--privileged")
	out := s.mustKubectl(t, "", "label", "namespace", "pss-strict", "pod-security.kubernetes.io/enforce=restricted")
	for _, want := range []string{
		`Warning: existing pods in namespace "pss-strict" violate the new PodSecurity enforce level "restricted:latest"`,
		"old: privileged",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("kubectl label output lacks %q:\n%s", want, out)
		}
	}

	out, err := s.kubectl(t, "", "run", "priv", "-n", "pss-strict", "--image=busybox", "--privileged")
	want := `Error from server (Forbidden): pods "priv" is forbidden: violates PodSecurity "restricted:latest": privileged (container "priv" must not set securityContext.privileged=true)`
	if err == nil || !strings.Contains(out, want) {
		t.Fatalf("privileged pod in a restricted namespace: err %v, output\n%s\nwant %s", err, out, want)
	}
	// A deployment is warned about, not refused.
	out = s.mustKubectl(t, "", "create", "deployment", "web", "-n", "pss-strict", "--image=nginx")
	if !strings.Contains(out, `Warning: would violate PodSecurity "restricted:latest"`) || !strings.Contains(out, "deployment.apps/web created") {
		t.Fatalf("deployment in a restricted namespace:\n%s", out)
	}

	s.mustKubectl(t, "", "label", "namespace", "pss-warn", "pod-security.kubernetes.io/warn=baseline")
	out = s.mustKubectl(t, "", "run", "warned", "-n", "pss-warn", "--image=busybox", "--privileged")
	if !strings.Contains(out, `Warning: would violate PodSecurity "baseline:latest": privileged`) || !strings.Contains(out, "pod/warned created") {
		t.Fatalf("warn mode:\n%s", out)
	}

	out, err = s.kubectl(t, "", "label", "namespace", "pss-warn", "pod-security.kubernetes.io/enforce=strictest")
	if err == nil || !strings.Contains(out, "pod-security.kubernetes.io/enforce") || !strings.Contains(out, "Invalid") {
		t.Fatalf("invalid level: err %v\n%s", err, out)
	}
}

const (
	e2eKey1 = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="
	e2eKey2 = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXphYmNkZWY="
	e2eKey3 = "Y29tcGxldGVseS1kaWZmZXJlbnQta2V5LTMyLWJ5dGU="
)

func writeEncryptionConfig(t *testing.T, path string, keys ...string) {
	t.Helper()
	y := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, configmaps]\n  providers:\n"
	for i := 0; i+1 < len(keys); i += 2 {
		y += "  - aescbc:\n      keys:\n      - name: " + keys[i] + "\n        secret: " + keys[i+1] + "\n"
	}
	y += "  - identity: {}\n"
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rawStore opens the stopped server's embedded store and returns every
// value under prefix.
func rawStore(t *testing.T, dataDir, prefix string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	st, err := embedded.Open(ctx, embedded.Options{Dir: filepath.Join(dataDir, "store"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kvs, _, err := st.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestEncryptionAtRestKubectl: secrets and configmaps encrypted at rest by
// `myriad up --encryption-provider-config`, key rotation by upstream's
// documented procedure, a wrong key, and PodSecurity exemptions from
// --admission-control-config-file.
func TestEncryptionAtRestKubectl(t *testing.T) {
	dir := t.TempDir()
	encPath := filepath.Join(dir, "encryption.yaml")
	admPath := filepath.Join(dir, "admission.yaml")
	if err := os.WriteFile(admPath, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
    exemptions:
      namespaces: [exempt]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(dir, "data")
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	start := func() *server {
		t.Helper()
		s, err := startCommand("up", dataDir, port, "--encryption-provider-config", encPath, "--admission-control-config-file", admPath, "--controllers=", "--scheduler=false",
			// No controllers make the default ServiceAccount.
			"--disable-admission-plugins=ServiceAccount")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	stop := func(s *server) {
		t.Helper()
		if err := s.stop(); err != nil {
			t.Fatal(err)
		}
	}
	const secretText = "e2e-hunter2-plaintext"
	writeEncryptionConfig(t, encPath, "key1", e2eKey1)
	s := start()
	s.mustKubectl(t, "", "create", "secret", "generic", "db", "--from-literal=password="+secretText)
	s.mustKubectl(t, "", "create", "configmap", "cfg", "--from-literal=k="+secretText)

	// PodSecurity from the admission configuration: baseline by default,
	// an exempt namespace.
	out, err := s.kubectl(t, "", "run", "priv", "--image=busybox", "--privileged")
	if err == nil || !strings.Contains(out, `violates PodSecurity "baseline:latest"`) {
		t.Fatalf("default enforce=baseline: err %v\n%s", err, out)
	}
	s.mustKubectl(t, "", "create", "namespace", "exempt")
	s.mustKubectl(t, "", "run", "priv", "-n", "exempt", "--image=busybox", "--privileged")

	stop(s)
	raw := rawStore(t, dataDir, "/")
	for k, v := range raw {
		if bytes.Contains(v, []byte(secretText)) {
			t.Fatalf("plaintext under %s in the raw store", k)
		}
	}
	for _, k := range []string{"/core/secrets/default/db", "/core/configmaps/default/cfg"} {
		if !bytes.HasPrefix(raw[k], []byte("k8s:enc:aescbc:v1:key1:")) {
			t.Fatalf("%s stored as %q", k, raw[k][:min(40, len(raw[k]))])
		}
	}

	// Rotation: the new key first, the old one still read; rewrite every
	// secret; drop the old key.
	writeEncryptionConfig(t, encPath, "key2", e2eKey2, "key1", e2eKey1)
	s = start()
	if got := s.mustKubectl(t, "", "get", "secret", "db", "-o", "jsonpath={.data.password}"); got == "" {
		t.Fatal("secret unreadable after adding a key")
	}
	all := s.mustKubectl(t, "", "get", "secrets", "-A", "-o", "json")
	s.mustKubectl(t, all, "replace", "-f", "-")
	stop(s)
	raw = rawStore(t, dataDir, "/core/secrets/")
	for k, v := range raw {
		if !bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:key2:")) {
			t.Fatalf("after the rewrite %s is stored as %q", k, v[:min(40, len(v))])
		}
	}

	writeEncryptionConfig(t, encPath, "key2", e2eKey2)
	s = start()
	got := s.mustKubectl(t, "", "get", "secret", "db", "-o", "go-template={{.data.password | base64decode}}")
	if got != secretText {
		t.Fatalf("after rotation: %q", got)
	}
	// The configmap was not rewritten: it is still under key1, which is
	// gone, and says so.
	out, err = s.kubectl(t, "", "get", "configmap", "cfg")
	if err == nil || !strings.Contains(out, "k8s:enc:aescbc:v1:key1:") || !strings.Contains(out, "/core/configmaps/default/cfg") {
		t.Fatalf("configmap under a removed key: err %v\n%s", err, out)
	}
	stop(s)

	// A wrong key: a clear error, not a crash; the server keeps serving.
	writeEncryptionConfig(t, encPath, "key3", e2eKey3)
	s = start()
	defer stop(s)
	out, err = s.kubectl(t, "", "get", "secret", "db")
	if err == nil || !strings.Contains(out, "InternalError") && !strings.Contains(out, "Internal error") || !strings.Contains(out, "encrypted (k8s:enc:aescbc:v1:key2:)") {
		t.Fatalf("wrong key: err %v\n%s", err, out)
	}
	s.mustKubectl(t, "", "get", "namespaces")
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gatewayAPIDir holds Gateway API's standard CRDs with upstream's valid
// and invalid examples (see its README and LICENSE).
const gatewayAPIDir = "../../internal/apiextensions/testdata/gatewayapi"

// TestGatewayAPICRDs installs a real-world CRD set with kubectl (Gateway
// API: large schemas, many CEL rules, several versions), applies upstream's
// valid examples, sees its invalid ones refused by the schemas' rules, and
// reads the resources through kubectl get and explain.
func TestGatewayAPICRDs(t *testing.T) {
	const ns = "gateway-api-e2e"
	install := filepath.Join(gatewayAPIDir, "standard-install.yaml")
	shared.mustKubectl(t, "", "apply", "--server-side", "-f", install)
	defer func() { _, _ = shared.kubectl(t, "", "delete", "-f", install, "--wait=false") }()
	shared.mustKubectl(t, "", "wait", "--for", "condition=Established", "--timeout=30s",
		"crd/gatewayclasses.gateway.networking.k8s.io", "crd/gateways.gateway.networking.k8s.io",
		"crd/httproutes.gateway.networking.k8s.io", "crd/referencegrants.gateway.networking.k8s.io")
	// The examples name their own namespaces; the rest go to ns.
	for _, n := range []string{ns, "gateway-api-example-ns1", "gateway-api-example-ns2"} {
		shared.mustKubectl(t, "", "create", "namespace", n)
		defer func() { _, _ = shared.kubectl(t, "", "delete", "namespace", n, "--wait=false") }()
	}

	valid, err := filepath.Glob(filepath.Join(gatewayAPIDir, "valid", "*.yaml"))
	if err != nil || len(valid) == 0 {
		t.Fatalf("valid examples: %v %v", valid, err)
	}
	for _, f := range valid {
		args := []string{"apply", "-f", f}
		if data, err := os.ReadFile(f); err == nil && !strings.Contains(string(data), "  namespace: gateway-api-example") {
			args = append(args, "-n", ns)
		}
		shared.mustKubectl(t, "", args...)
	}
	invalid, err := filepath.Glob(filepath.Join(gatewayAPIDir, "invalid", "httproute", "*.yaml"))
	if err != nil || len(invalid) == 0 {
		t.Fatalf("invalid examples: %v %v", invalid, err)
	}
	for _, f := range invalid {
		out, err := shared.kubectl(t, "", "create", "-n", ns, "-f", f)
		if err == nil || !strings.Contains(out, "is invalid") {
			data, _ := os.ReadFile(f)
			t.Errorf("%s was not refused: %v\n%s\n%s", filepath.Base(f), err, out, data)
		}
	}

	if out := shared.mustKubectl(t, "", "get", "httproutes", "-n", ns); !strings.Contains(out, "HOSTNAMES") {
		t.Errorf("kubectl get httproutes: no printer columns:\n%s", out)
	}
	if out := shared.mustKubectl(t, "", "explain", "httproute.spec.rules"); !strings.Contains(out, "backendRefs") {
		t.Errorf("kubectl explain httproute.spec.rules:\n%s", out)
	}
	// Every version the CRDs serve is in discovery.
	if out := shared.mustKubectl(t, "", "api-resources", "--api-group", "gateway.networking.k8s.io"); !strings.Contains(out, "httproutes") || !strings.Contains(out, "referencegrants") {
		t.Errorf("api-resources:\n%s", out)
	}
}

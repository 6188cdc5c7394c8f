package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPythonClient drives the server with the official Python client, a
// second implementation of the wire protocol nobody here wrote. CI installs
// it (.ci/run); elsewhere the test skips when the package is missing.
func TestPythonClient(t *testing.T) {
	if err := exec.Command("python3", "-c", "import kubernetes").Run(); err != nil {
		t.Skip("python3 with the kubernetes package is not installed (pip install kubernetes)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "python3", "python/client_check.py", shared.kubeconfig).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Fatalf("python client check failed: %v\n%s", err, out)
	}
}

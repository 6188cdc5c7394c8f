package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSimNodeTokens runs hollow nodes that authenticate with their own
// static tokens (myriad sim --write-node-tokens, the server's
// --token-auth-file, --node-token-file): the nodes register and go Ready
// as system:node:<name>, and a node whose token the server does not know
// is refused although the simulator's kubeconfig holds a valid client
// certificate — so the node requests really carry the node's credentials.
// The simulator itself is an identity without any role: never the admin.
func TestSimNodeTokens(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "node-tokens.csv")
	if out, err := exec.Command(binary, "sim", "--write-node-tokens", tokens, "--nodes", "3", "--name-prefix", "tok-").CombinedOutput(); err != nil {
		t.Fatalf("sim --write-node-tokens: %v\n%s", err, out)
	}
	data, err := os.ReadFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], ",system:node:tok-2,") {
		t.Fatalf("token file:\n%s", data)
	}
	// The simulator's copy has a token for tok-2 the server never issued.
	simTokens := filepath.Join(dir, "sim-tokens.csv")
	lines[2] = "0123456789abcdef" + lines[2][strings.Index(lines[2], ","):]
	if err := os.WriteFile(simTokens, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := startCommand("up", filepath.Join(dir, "data"), port, "--token-auth-file", tokens)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	// The simulator's own identity holds no role at all, and its client
	// certificate would authenticate every request on its connections
	// before any token: node requests must go on their own.
	simKubeconfig := filepath.Join(dir, "sim.kubeconfig")
	if out, err := exec.Command(binary, "kubeconfig", "--data-dir", srv.dataDir, "--server", fmt.Sprintf("https://127.0.0.1:%d", port),
		"--user", "myriad-sim", "-o", simKubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("myriad kubeconfig: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "sim", "--kubeconfig", simKubeconfig, "--nodes", "3", "--name-prefix", "tok-",
		"--node-token-file", simTokens, "--kubelet-port", "-1", "--status-interval", "0")
	var out safeBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()

	client := srv.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range []string{"tok-0", "tok-1"} {
		for {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeReady(n) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("node %s not Ready: %v\nsim output:\n%s", name, err, out.String())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// tok-0 and tok-1 registered; tok-2, started with them, by now would
	// have too if its requests went as the admin.
	time.Sleep(2 * time.Second)
	if _, err := client.CoreV1().Nodes().Get(ctx, "tok-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node tok-2 with an unknown token: get = %v, want NotFound\nsim output:\n%s", err, out.String())
	}
	lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "tok-0", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "tok-0" {
		t.Errorf("tok-0's Lease: %v, %v", lease, err)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubectlWith runs kubectl with kubeconfig instead of the admin's.
func kubectlWith(t testing.TB, kubeconfig, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// identityKubeconfig writes a kubeconfig from `myriad kubeconfig` args
// (--user alice --group devs, or --node n1) for s.
func (s *server) identityKubeconfig(t testing.TB, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cmd := exec.Command(binary, append([]string{"kubeconfig", "--data-dir", s.dataDir, "--server", s.restConfig(t).Host, "-o", path}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("myriad kubeconfig %v: %v\n%s", args, err, out)
	}
	return path
}

// tokenKubeconfig writes a kubeconfig for s whose only credential is token.
func (s *server) tokenKubeconfig(t testing.TB, token string) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	for name, c := range admin.Clusters {
		cfg.Clusters[name] = c
		user := clientcmdapi.NewAuthInfo()
		user.Token = token
		cfg.AuthInfos["token"] = user
		kctx := clientcmdapi.NewContext()
		kctx.Cluster, kctx.AuthInfo = name, "token"
		cfg.Contexts["token"] = kctx
		cfg.CurrentContext = "token"
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantOutput(t *testing.T, what, out string, err error, wantErr bool, contains ...string) {
	t.Helper()
	if (err != nil) != wantErr {
		t.Fatalf("%s: err = %v, want error %v\n%s", what, err, wantErr, out)
	}
	for _, c := range contains {
		if !strings.Contains(out, c) {
			t.Errorf("%s: output lacks %q:\n%s", what, c, out)
		}
	}
}

// TestSecurityKubectl walks the security story as a user meets it: who am
// I, what may I do, a ServiceAccount's token as the only credential,
// impersonation, and RBAC's refusal with upstream's message.
func TestSecurityKubectl(t *testing.T) {
	s := shared
	ns := "security-e2e"
	s.mustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "namespace", ns, "--wait=false") })

	t.Run("admin whoami", func(t *testing.T) {
		out, err := s.kubectl(t, "", "auth", "whoami")
		wantOutput(t, "auth whoami", out, err, false, "system:admin", "system:masters", "system:authenticated")
	})

	t.Run("service account token", func(t *testing.T) {
		s.mustKubectl(t, "", "-n", ns, "create", "serviceaccount", "builder")
		s.mustKubectl(t, "", "-n", ns, "create", "rolebinding", "builder-edit", "--clusterrole=edit", "--serviceaccount="+ns+":builder")
		token := strings.TrimSpace(s.mustKubectl(t, "", "-n", ns, "create", "token", "builder", "--duration=10m"))
		if strings.Count(token, ".") != 2 {
			t.Fatalf("kubectl create token printed %q, not a JWT", token)
		}
		kc := s.tokenKubeconfig(t, token)
		out, err := kubectlWith(t, kc, "", "auth", "whoami")
		wantOutput(t, "whoami with the token", out, err, false, "system:serviceaccount:"+ns+":builder", "system:serviceaccounts:"+ns)
		out, err = kubectlWith(t, kc, "", "-n", ns, "get", "pods")
		wantOutput(t, "get pods in its namespace", out, err, false)
		out, err = kubectlWith(t, kc, "", "-n", "default", "get", "pods")
		wantOutput(t, "get pods elsewhere", out, err, true,
			`pods is forbidden: User "system:serviceaccount:`+ns+`:builder" cannot list resource "pods" in API group "" in the namespace "default"`)
		out, err = kubectlWith(t, kc, "", "-n", ns, "auth", "can-i", "create", "deployments")
		wantOutput(t, "can-i create deployments", out, err, false, "yes")
		out, _ = kubectlWith(t, kc, "", "auth", "can-i", "create", "clusterroles")
		if lastLine(out) != "no" {
			t.Errorf("can-i create clusterroles = %q, want no", out)
		}
		out, err = kubectlWith(t, kc, "", "-n", ns, "auth", "can-i", "--list")
		wantOutput(t, "can-i --list", out, err, false, "pods", "deployments.apps", "selfsubjectaccessreviews.authorization.k8s.io")
		// edit holds no RBAC rights: binding itself to cluster-admin is
		// refused.
		out, err = kubectlWith(t, kc, "", "-n", ns, "create", "rolebinding", "escalate", "--clusterrole=cluster-admin", "--serviceaccount="+ns+":builder")
		wantOutput(t, "rolebinding to cluster-admin", out, err, true, "forbidden")

		// Deleting the account revokes the token (after upstream's 10 s
		// cache of successful authentications).
		s.mustKubectl(t, "", "-n", ns, "delete", "serviceaccount", "builder")
		waitFor(t, 30*time.Second, func() bool {
			out, err := kubectlWith(t, kc, "", "auth", "whoami")
			return err != nil && strings.Contains(out, "Unauthorized")
		})
	})

	t.Run("client certificate user and impersonation", func(t *testing.T) {
		kc := s.identityKubeconfig(t, "--user", "alice", "--group", "devs")
		out, err := kubectlWith(t, kc, "", "auth", "whoami")
		wantOutput(t, "alice whoami", out, err, false, "alice", "devs")
		out, err = kubectlWith(t, kc, "", "-n", ns, "get", "configmaps")
		wantOutput(t, "alice before any binding", out, err, true, `User "alice" cannot list resource "configmaps"`)
		s.mustKubectl(t, "", "-n", ns, "create", "rolebinding", "devs-view", "--clusterrole=view", "--group=devs")
		waitFor(t, 10*time.Second, func() bool {
			_, err := kubectlWith(t, kc, "", "-n", ns, "get", "configmaps")
			return err == nil
		})
		out, _ = kubectlWith(t, kc, "", "-n", ns, "auth", "can-i", "delete", "configmaps")
		if lastLine(out) != "no" {
			t.Errorf("alice can-i delete configmaps = %q, want no", out)
		}
		// The admin acting as alice sees what alice sees.
		out, err = s.kubectl(t, "", "--as=alice", "--as-group=devs", "auth", "whoami")
		wantOutput(t, "--as alice", out, err, false, "alice", "devs")
		out, err = s.kubectl(t, "", "--as=alice", "-n", "default", "get", "configmaps")
		wantOutput(t, "--as alice elsewhere", out, err, true, `User "alice" cannot list resource "configmaps"`)
		// alice may not impersonate anyone.
		out, err = kubectlWith(t, kc, "", "--as=system:admin", "get", "pods")
		wantOutput(t, "alice impersonating the admin", out, err, true, `cannot impersonate resource "users"`)
	})

	t.Run("node identity", func(t *testing.T) {
		kc := s.identityKubeconfig(t, "--node", "sec-node-a")
		node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"sec-node-a"}}`
		out, err := kubectlWith(t, kc, node, "create", "-f", "-")
		wantOutput(t, "node registers itself", out, err, false)
		t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "node", "sec-node-a", "sec-node-b") })
		other := strings.ReplaceAll(node, "sec-node-a", "sec-node-b")
		out, err = kubectlWith(t, kc, other, "create", "-f", "-")
		wantOutput(t, "node registers another", out, err, true, "forbidden")
		out, err = kubectlWith(t, kc, "", "label", "node", "sec-node-a", "node-role.kubernetes.io/control-plane=")
		wantOutput(t, "node labels itself into a role", out, err, true, "forbidden")
		s.mustKubectl(t, "", "-n", ns, "create", "secret", "generic", "unbound", "--from-literal=k=v")
		out, err = kubectlWith(t, kc, "", "-n", ns, "get", "secret", "unbound")
		wantOutput(t, "node reads a secret no pod of its uses", out, err, true, "no relationship found between node 'sec-node-a' and this object")
	})
}

// lastLine is out's last non-empty line (kubectl prints warnings first).
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

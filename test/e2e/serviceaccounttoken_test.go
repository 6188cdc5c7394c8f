package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestServiceAccountTokens: `kubectl create token` issues a JWT that
// authenticates as the only credential while its ServiceAccount (and bound
// pod) exist; pods get their kube-api-access volume; legacy token Secrets
// are filled and removed with their account; the issuer's discovery
// documents are served.
func TestServiceAccountTokens(t *testing.T) {
	s := shared
	ctx := context.Background()
	cs := s.client(t)
	const ns = "satoken"
	s.mustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = s.kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	s.mustKubectl(t, "", "-n", ns, "create", "serviceaccount", "robot")
	// Under RBAC the account may read its namespace (upstream's view role).
	s.mustKubectl(t, "", "-n", ns, "create", "rolebinding", "robot-view", "--clusterrole=view", "--serviceaccount="+ns+":robot")

	// A kubeconfig that trusts the CA and holds no credentials at all.
	bare := bareKubeconfig(t, s)
	asToken := func(token string, args ...string) (string, error) {
		t.Helper()
		return runKubectl(t, append([]string{"--kubeconfig", bare, "--token", token}, args...)...)
	}

	tok := strings.TrimSpace(s.mustKubectl(t, "", "-n", ns, "create", "token", "robot", "--duration", "20m"))
	claims := jwtClaims(t, tok)
	if claims["sub"] != "system:serviceaccount:"+ns+":robot" || claims["iss"] != "https://kubernetes.default.svc.cluster.local" {
		t.Fatalf("claims %v", claims)
	}
	if exp, iat := claims["exp"].(float64), claims["iat"].(float64); exp-iat != 1200 {
		t.Errorf("lifetime %vs, want 1200", exp-iat)
	}
	if out, err := asToken(tok, "-n", ns, "get", "serviceaccounts", "robot", "-o", "name"); err != nil || strings.TrimSpace(out) != "serviceaccount/robot" {
		t.Fatalf("the token as only credential: %v\n%s", err, out)
	}
	// Who the server takes the token's bearer for, where SelfSubjectReview
	// is served (it is not on a server without the review APIs).
	if out, err := asToken(tok, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}"); err == nil {
		if !strings.HasPrefix(out, "system:serviceaccount:"+ns+":robot ") || !strings.Contains(out, "system:serviceaccounts:"+ns) {
			t.Fatalf("whoami: %s", out)
		}
	} else if !strings.Contains(out, "not enabled") && !strings.Contains(out, "NotFound") && !strings.Contains(out, "not found") {
		t.Fatalf("whoami: %v\n%s", err, out)
	}
	// Tampered and foreign tokens are 401.
	if out, err := asToken(tok[:len(tok)-4]+"AAAA", "-n", ns, "get", "pods"); err == nil || !strings.Contains(out, "Unauthorized") {
		t.Fatalf("tampered token: %v\n%s", err, out)
	}
	if out, err := s.kubectl(t, "", "-n", ns, "create", "token", "ghost"); err == nil || !strings.Contains(out, `serviceaccounts "ghost" not found`) {
		t.Fatalf("token for a missing account: %v\n%s", err, out)
	}
	if out, err := s.kubectl(t, "", "-n", ns, "create", "token", "robot", "--duration", "5m"); err == nil || !strings.Contains(out, "may not specify a duration less than 10 minutes") {
		t.Fatalf("too short a token: %v\n%s", err, out)
	}

	// Pods get the token volume, mounted in every container.
	s.mustKubectl(t, `apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  serviceAccountName: robot
  initContainers: [{name: init, image: busybox}]
  containers: [{name: a, image: busybox}, {name: b, image: busybox}]
`, "-n", ns, "apply", "-f", "-")
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkTokenVolume(t, pod)
	// The namespace's default account is named when the pod names none.
	s.mustKubectl(t, "", "-n", ns, "run", "plain", "--image", "busybox", "--restart", "Never")
	plain, err := cs.CoreV1().Pods(ns).Get(ctx, "plain", metav1.GetOptions{})
	if err != nil || plain.Spec.ServiceAccountName != "default" {
		t.Fatalf("plain pod: %v %+v", err, plain)
	}
	if out, err := s.kubectl(t, "", "-n", ns, "run", "orphan", "--image", "busybox", "--overrides", `{"spec":{"serviceAccountName":"ghost"}}`); err == nil ||
		!strings.Contains(out, "error looking up service account "+ns+"/ghost") {
		t.Fatalf("pod of a missing account: %v\n%s", err, out)
	}

	// A pod-bound token works while the pod exists.
	podTok := strings.TrimSpace(s.mustKubectl(t, "", "-n", ns, "create", "token", "robot", "--bound-object-kind", "Pod", "--bound-object-name", "p"))
	if pc := jwtClaims(t, podTok)["kubernetes.io"].(map[string]any)["pod"].(map[string]any); pc["uid"] != string(pod.UID) {
		t.Fatalf("pod claim %v", pc)
	}
	if out, err := asToken(podTok, "-n", ns, "get", "pods"); err != nil {
		t.Fatalf("pod-bound token: %v\n%s", err, out)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod-bound token refused after the pod is deleted", func() bool {
		out, err := asToken(podTok, "-n", ns, "get", "pods")
		return err != nil && strings.Contains(out, "Unauthorized")
	})

	// A legacy token Secret is filled by the controller and works.
	s.mustKubectl(t, `apiVersion: v1
kind: Secret
metadata:
  name: robot-token
  annotations: {kubernetes.io/service-account.name: robot}
type: kubernetes.io/service-account-token
`, "-n", ns, "apply", "-f", "-")
	var legacy *corev1.Secret
	eventually(t, "token secret filled", func() bool {
		legacy, err = cs.CoreV1().Secrets(ns).Get(ctx, "robot-token", metav1.GetOptions{})
		return err == nil && len(legacy.Data["token"]) > 0
	})
	if string(legacy.Data["namespace"]) != ns || len(legacy.Data["ca.crt"]) == 0 || legacy.Annotations["kubernetes.io/service-account.uid"] == "" {
		t.Fatalf("secret data keys %v, annotations %v", keys(legacy.Data), legacy.Annotations)
	}
	legacyTok := string(legacy.Data["token"])
	if jwtClaims(t, legacyTok)["iss"] != "kubernetes/serviceaccount" {
		t.Fatal("not a legacy token")
	}
	if out, err := asToken(legacyTok, "-n", ns, "get", "pods"); err != nil {
		t.Fatalf("legacy token: %v\n%s", err, out)
	}

	// The issuer's discovery documents.
	var config map[string]any
	if err := json.Unmarshal([]byte(s.mustKubectl(t, "", "get", "--raw", "/.well-known/openid-configuration")), &config); err != nil {
		t.Fatal(err)
	}
	if config["issuer"] != "https://kubernetes.default.svc.cluster.local" || !strings.HasSuffix(config["jwks_uri"].(string), "/openid/v1/jwks") {
		t.Fatalf("openid configuration %v", config)
	}
	var jwks struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal([]byte(s.mustKubectl(t, "", "get", "--raw", "/openid/v1/jwks")), &jwks); err != nil || len(jwks.Keys) != 1 || jwks.Keys[0]["alg"] != "RS256" {
		t.Fatalf("jwks %v %v", jwks, err)
	}

	// Deleting the account ends its tokens and its token Secret.
	s.mustKubectl(t, "", "-n", ns, "delete", "serviceaccount", "robot")
	eventually(t, "tokens refused after the account is deleted", func() bool {
		out1, err1 := asToken(tok, "-n", ns, "get", "pods")
		out2, err2 := asToken(legacyTok, "-n", ns, "get", "pods")
		return err1 != nil && strings.Contains(out1, "Unauthorized") && err2 != nil && strings.Contains(out2, "Unauthorized")
	})
	eventually(t, "token secret deleted with its account", func() bool {
		_, err := cs.CoreV1().Secrets(ns).Get(ctx, "robot-token", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func checkTokenVolume(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	var name string
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil && len(v.Projected.Sources) == 3 &&
			v.Projected.Sources[0].ServiceAccountToken != nil && *v.Projected.Sources[0].ServiceAccountToken.ExpirationSeconds == 3607 {
			name = v.Name
		}
	}
	if name == "" {
		t.Fatalf("no kube-api-access volume in %+v", pod.Spec.Volumes)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		ok := false
		for _, m := range c.VolumeMounts {
			ok = ok || (m.Name == name && m.ReadOnly && m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount")
		}
		if !ok {
			t.Errorf("container %s does not mount %s", c.Name, name)
		}
	}
}

// bareKubeconfig writes a kubeconfig for s with the cluster and its CA and
// no user credentials.
func bareKubeconfig(t *testing.T, s *server) string {
	t.Helper()
	admin, err := clientcmd.LoadFromFile(s.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	for name, c := range admin.Clusters {
		cfg.Clusters[name] = c
		cfg.AuthInfos["nobody"] = clientcmdapi.NewAuthInfo()
		cfg.Contexts["bare"] = &clientcmdapi.Context{Cluster: name, AuthInfo: "nobody"}
	}
	cfg.CurrentContext = "bare"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); strings.Contains(string(data), "token") || strings.Contains(string(data), "client-certificate") {
		t.Fatalf("bare kubeconfig holds credentials:\n%s", data)
	}
	return path
}

func runKubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kubectl", args...).CombinedOutput()
	return string(out), err
}

// eventually polls cond for up to 30 s, naming what it waited for.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
	}
}

func jwtClaims(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(data, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRemoteTokenController: `myriad controllers` against a separate
// `myriad apiserver` fills token Secrets with the key it is given
// (--service-account-private-key-file, the server's sa.key), and the server
// accepts the tokens.
func TestRemoteTokenController(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "api")
	s, err := startAPIServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	startControllerManager(t, s, "--controllers=serviceaccount,serviceaccount-token",
		"--service-account-private-key-file", filepath.Join(dir, "sa.key"))
	ctx := context.Background()
	cs := s.client(t)
	s.mustKubectl(t, "", "create", "serviceaccount", "remote")
	// A Role of its own, not view: view's rules are aggregated by a
	// controller this API-only server does not run.
	s.mustKubectl(t, "", "create", "role", "remote-read", "--verb=get", "--resource=serviceaccounts")
	s.mustKubectl(t, "", "create", "rolebinding", "remote-read", "--role=remote-read", "--serviceaccount=default:remote")
	s.mustKubectl(t, `apiVersion: v1
kind: Secret
metadata:
  name: remote-token
  annotations: {kubernetes.io/service-account.name: remote}
type: kubernetes.io/service-account-token
`, "apply", "-f", "-")
	var token string
	eventually(t, "token secret filled by the remote controller", func() bool {
		sec, err := cs.CoreV1().Secrets("default").Get(ctx, "remote-token", metav1.GetOptions{})
		if err != nil {
			return false
		}
		token = string(sec.Data["token"])
		return token != ""
	})
	if out, err := runKubectl(t, "--kubeconfig", bareKubeconfig(t, s), "--token", token, "get", "serviceaccounts", "remote", "-o", "name"); err != nil {
		t.Fatalf("legacy token from the remote controller: %v\n%s", err, out)
	}
}

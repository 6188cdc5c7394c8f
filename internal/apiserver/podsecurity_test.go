package apiserver

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	psload "k8s.io/pod-security-admission/admission/api/load"

	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// warningCollector is a client-go WarningHandler keeping what the server
// sent in Warning headers.
type warningCollector struct {
	mu   sync.Mutex
	msgs []string
}

func (c *warningCollector) HandleWarningHeader(_ int, _ string, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg)
}

func (c *warningCollector) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.msgs
	c.msgs = nil
	return out
}

// warningClient is a client of e whose warnings go to the returned
// collector.
func (e *testEnv) warningClient(t *testing.T) (kubernetes.Interface, *warningCollector) {
	t.Helper()
	warns := &warningCollector{}
	c := rest.CopyConfig(e.cfg)
	c.WarningHandler = warns
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return cs, warns
}

// asUser puts the user named in the X-Test-User header on the request, in
// place of the authentication filter.
func asUser(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name := r.Header.Get("X-Test-User"); name != "" {
			r = r.WithContext(request.WithUser(r.Context(), &request.User{Name: name}))
		}
		h.ServeHTTP(w, r)
	})
}

func podSecurityEnv(t *testing.T) (*testEnv, *warningCollector, func(user string) kubernetes.Interface) {
	t.Helper()
	cfg, err := psload.LoadFromData([]byte(`
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
exemptions:
  usernames: ["exempt-user"]
  namespaces: ["exempt-ns"]
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withConfig(func(c *Config) { c.PodSecurity = cfg }), withHandler(asUser))
	warns := &warningCollector{}
	client := func(user string) kubernetes.Interface {
		c := rest.CopyConfig(e.cfg)
		c.WarningHandler = warns
		if user != "" {
			c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
				return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					r = r.Clone(r.Context())
					r.Header.Set("X-Test-User", user)
					return rt.RoundTrip(r)
				})
			}
		}
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	return e, warns, client
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func labeledNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func privilegedPod(name string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox",
			SecurityContext: &corev1.SecurityContext{Privileged: &yes},
		}}},
	}
}

// baselinePod meets baseline but not restricted.
func baselinePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
}

// restrictedPod meets restricted.
func restrictedPod(name string) *corev1.Pod {
	no, yes := false, true
	p := baselinePod(name)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsNonRoot:   &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	return p
}

func TestPodSecurityPods(t *testing.T) {
	_, warns, client := podSecurityEnv(t)
	ctx := context.Background()
	admin := client("")
	for _, ns := range []*corev1.Namespace{
		labeledNamespace("plain", nil),
		labeledNamespace("restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
		labeledNamespace("baseline", map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.30"}),
		labeledNamespace("warned", map[string]string{"pod-security.kubernetes.io/warn": "restricted"}),
		labeledNamespace("exempt-ns", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}),
	} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	warns.take()

	cases := []struct {
		name, ns, user string
		pod            *corev1.Pod
		// wantErr is the prefix of the refusal's message ("" allowed).
		wantErr string
		// wantWarn is a substring every run must find in one warning
		// ("" no warning at all).
		wantWarn string
	}{
		{name: "no labels admit a privileged pod", ns: "plain", pod: privilegedPod("p1")},
		{name: "restricted refuses a privileged pod", ns: "restricted", pod: privilegedPod("p2"),
			wantErr: `pods "p2" is forbidden: violates PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`},
		{name: "restricted refuses a baseline pod", ns: "restricted", pod: baselinePod("p3"),
			wantErr: `pods "p3" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`},
		{name: "restricted admits a restricted pod", ns: "restricted", pod: restrictedPod("p4")},
		{name: "baseline admits a baseline pod", ns: "baseline", pod: baselinePod("p5")},
		{name: "baseline refuses a privileged pod", ns: "baseline", pod: privilegedPod("p6"),
			wantErr: `pods "p6" is forbidden: violates PodSecurity "baseline:v1.30": privileged`},
		{name: "warn mode admits with a warning", ns: "warned", pod: baselinePod("p7"),
			wantWarn: `would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`},
		{name: "warn mode is quiet for a restricted pod", ns: "warned", pod: restrictedPod("p8")},
		{name: "exempt namespace", ns: "exempt-ns", pod: privilegedPod("p9")},
		{name: "exempt user", ns: "restricted", user: "exempt-user", pod: privilegedPod("p10")},
		{name: "other user is not exempt", ns: "restricted", user: "someone", pod: privilegedPod("p11"),
			wantErr: `pods "p11" is forbidden: violates PodSecurity "restricted:latest"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client(tc.user).CoreV1().Pods(tc.ns).Create(ctx, tc.pod, metav1.CreateOptions{})
			got := warns.take()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "":
				if !apierrors.IsForbidden(err) {
					t.Fatalf("err = %v, want 403 Forbidden", err)
				}
				if !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("message\n %s\nwant prefix\n %s", err, tc.wantErr)
				}
			}
			if tc.wantWarn == "" && len(got) > 0 {
				t.Fatalf("unexpected warnings %q", got)
			}
			if tc.wantWarn != "" && (len(got) != 1 || !strings.Contains(got[0], tc.wantWarn)) {
				t.Fatalf("warnings %q, want one containing %q", got, tc.wantWarn)
			}
		})
	}
}

func TestPodSecurityWorkloadsWarnNotRefused(t *testing.T) {
	_, warns, client := podSecurityEnv(t)
	ctx := context.Background()
	cs := client("")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, labeledNamespace("strict", map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	warns.take()
	one := int32(1)
	pod := privilegedPod("")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}}, Spec: pod.Spec},
		},
	}
	if _, err := cs.AppsV1().Deployments("strict").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("deployment refused: %v", err)
	}
	got := warns.take()
	want := `would violate PodSecurity "restricted:latest": privileged (container "c" must not set securityContext.privileged=true)`
	if len(got) != 1 || !strings.Contains(got[0], want) {
		t.Fatalf("warnings %q, want one containing %q", got, want)
	}
}

func TestPodSecurityNamespaceLabels(t *testing.T) {
	_, warns, client := podSecurityEnv(t)
	ctx := context.Background()
	cs := client("")
	if _, err := cs.CoreV1().Namespaces().Create(ctx, labeledNamespace("later", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods("later").Create(ctx, privilegedPod("old"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	warns.take()

	t.Run("tightening warns about existing pods", func(t *testing.T) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "later", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
		// The pods list is read from the cache as it stands; the pod was
		// created through this server, so the cache has it once the
		// namespace update is admitted after a consistent read.
		waitFor(t, 10*time.Second, "pod in cache", func() bool {
			_, err := cs.CoreV1().Pods("later").Get(ctx, "old", metav1.GetOptions{ResourceVersion: "0"})
			return err == nil
		})
		if _, err := cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("label update refused: %v", err)
		}
		got := warns.take()
		joined := strings.Join(got, "\n")
		for _, want := range []string{
			`existing pods in namespace "later" violate the new PodSecurity enforce level "restricted:latest"`,
			`old: privileged`,
		} {
			if !strings.Contains(joined, want) {
				t.Fatalf("warnings %q, want %q", got, want)
			}
		}
	})
	t.Run("pods created after the label are refused", func(t *testing.T) {
		// The namespace was read (and its decoded copy kept) for the pod
		// created before the label; the new revision must replace it.
		var err error
		waitFor(t, 10*time.Second, "refusal under the new label", func() bool {
			_, err = cs.CoreV1().Pods("later").Create(ctx, privilegedPod("new"), metav1.CreateOptions{})
			if err == nil {
				_ = cs.CoreV1().Pods("later").Delete(ctx, "new", metav1.DeleteOptions{})
			}
			return apierrors.IsForbidden(err)
		})
		if !strings.Contains(err.Error(), `violates PodSecurity "restricted:latest"`) {
			t.Fatal(err)
		}
	})
	t.Run("invalid level is refused", func(t *testing.T) {
		_, err := cs.CoreV1().Namespaces().Create(ctx, labeledNamespace("bad", map[string]string{
			"pod-security.kubernetes.io/enforce": "strict"}), metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod-security.kubernetes.io/enforce") {
			t.Fatalf("err = %v, want 422 Invalid naming the label", err)
		}
	})
}

// TestPodSecurityDefaults: a configuration's defaults apply to namespaces
// without labels.
func TestPodSecurityDefaults(t *testing.T) {
	cfg, err := psload.LoadFromData([]byte(`
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: baseline
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withConfig(func(c *Config) { c.PodSecurity = cfg }))
	_, err = e.cs.CoreV1().Pods("default").Create(context.Background(), privilegedPod("p"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
		t.Fatalf("err = %v, want baseline refusal", err)
	}
}

package podsecurity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
	"github.com/myriad-k8s/myriad/internal/apiserver/request"
)

// namespaces is the plugin's namespace source for these tests: the
// objects a cache would hold.
type namespaces map[string]*corev1.Namespace

func (n namespaces) get(_ context.Context, name string) (*corev1.Namespace, error) {
	if ns, ok := n[name]; ok {
		return ns, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
}

func newPlugin(t testing.TB, nss namespaces, pods ...*corev1.Pod) *Plugin {
	t.Helper()
	p, err := New(Config{
		Namespace: nss.get,
		Pods: func(_ context.Context, ns string) ([]*corev1.Pod, error) {
			var out []*corev1.Pod
			for _, p := range pods {
				if p.Namespace == ns {
					out = append(out, p)
				}
			}
			return out, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ns(name string, labels ...string) *corev1.Namespace {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	return n
}

func privileged(name, namespace string) *corev1.Pod {
	yes := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &yes},
		}}},
	}
}

func podCreate(p *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{
		Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: p.Namespace, Name: p.Name,
		Object: p, User: &request.User{Name: "alice"},
	}
}

type sinks struct {
	warnings    []string
	annotations map[string]string
}

func (s *sinks) AddWarning(text string)          { s.warnings = append(s.warnings, text) }
func (s *sinks) AddAnnotation(key, value string) { s.annotations[key] = value }

func (s *sinks) ctx() context.Context {
	s.annotations = map[string]string{}
	return request.WithAuditAnnotations(request.WithWarnings(context.Background(), s), s)
}

// TestAuditAnnotations: audit mode reaches the audit annotation sink with
// upstream's keys, and refuses nothing.
func TestAuditAnnotations(t *testing.T) {
	p := newPlugin(t, namespaces{"a": ns("a", "pod-security.kubernetes.io/audit", "restricted")})
	var s sinks
	if err := p.Validate(s.ctx(), podCreate(privileged("x", "a"))); err != nil {
		t.Fatalf("audit mode refused: %v", err)
	}
	got := s.annotations["pod-security.kubernetes.io/audit-violations"]
	if !strings.HasPrefix(got, `would violate PodSecurity "restricted:latest": privileged`) {
		t.Fatalf("audit-violations = %q; annotations %v", got, s.annotations)
	}
	if s.annotations["pod-security.kubernetes.io/enforce-policy"] != "privileged:latest" {
		t.Fatalf("enforce-policy annotation: %v", s.annotations)
	}
	if len(s.warnings) != 0 {
		t.Fatalf("audit mode warned: %q", s.warnings)
	}
}

// TestOutOfScope: writes PodSecurity has no opinion on pass untouched.
func TestOutOfScope(t *testing.T) {
	p := newPlugin(t, namespaces{"a": ns("a", "pod-security.kubernetes.io/enforce", "restricted")})
	pod := privileged("x", "a")
	cases := []struct {
		name string
		a    *admission.Attributes
	}{
		{"configmap", &admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"),
			Namespace: "a", Name: "c", Object: &corev1.ConfigMap{}}},
		{"pod status", &admission.Attributes{Operation: admission.Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"),
			Subresource: "status", Namespace: "a", Name: "x", Object: pod, OldObject: pod}},
		{"deployment scale", &admission.Attributes{Operation: admission.Update, Resource: appsv1.SchemeGroupVersion.WithResource("deployments"),
			Subresource: "scale", Namespace: "a", Name: "d", Object: &appsv1.Deployment{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s sinks
			if err := p.Validate(s.ctx(), tc.a); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) || !p.Handles(admission.Create) || !p.Handles(admission.Update) {
		t.Fatal("Handles: want CREATE and UPDATE only")
	}
}

// TestMissingNamespace: a pod whose namespace cannot be read is refused
// with a Status, not admitted unchecked.
func TestMissingNamespace(t *testing.T) {
	p := newPlugin(t, namespaces{})
	var s sinks
	err := p.Validate(s.ctx(), podCreate(privileged("x", "gone")))
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed to lookup namespace "gone"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadAdmissionConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ps.yaml", `
apiVersion: pod-security.admission.config.k8s.io/v1
kind: PodSecurityConfiguration
defaults:
  enforce: restricted
exemptions:
  namespaces: [kube-system]
`)
	cases := []struct {
		name, body string
		wantErr    string
		wantLevel  string
		wantExempt []string
	}{
		{name: "inline", body: `
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      warn: restricted
    exemptions:
      usernames: [admin]
`, wantLevel: "baseline"},
		{name: "path relative to the file", body: `
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: ps.yaml
`, wantLevel: "restricted", wantExempt: []string{"kube-system"}},
		{name: "no entry gives defaults", body: `
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  path: elsewhere.yaml
`, wantLevel: "privileged"},
		{name: "wrong kind", body: "kind: Pod\n", wantErr: "not AdmissionConfiguration"},
		{name: "bad level", body: `
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: strict}
`, wantErr: ""},
		{name: "missing path", body: `
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  path: nope.yaml
`, wantErr: "nope.yaml"},
		{name: "not yaml", body: "{[", wantErr: "admission configuration"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := write("ac"+string(rune('a'+i))+".yaml", tc.body)
			cfg, err := LoadAdmissionConfig(path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = New(Config{Configuration: cfg, Namespace: namespaces{}.get,
				Pods: func(context.Context, string) ([]*corev1.Pod, error) { return nil, nil }})
			if tc.name == "bad level" {
				if err == nil || !strings.Contains(err.Error(), "strict") {
					t.Fatalf("New accepted enforce: strict (err %v)", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Defaults.Enforce != tc.wantLevel {
				t.Fatalf("defaults.enforce = %q, want %q", cfg.Defaults.Enforce, tc.wantLevel)
			}
			if tc.wantExempt != nil && strings.Join(cfg.Exemptions.Namespaces, ",") != strings.Join(tc.wantExempt, ",") {
				t.Fatalf("exempt namespaces %v, want %v", cfg.Exemptions.Namespaces, tc.wantExempt)
			}
		})
	}
	if cfg, err := LoadAdmissionConfig(""); err != nil || cfg.Defaults.Enforce != "privileged" {
		t.Fatalf("no file: %v %v", cfg, err)
	}
}

// BenchmarkValidatePodCreate is PodSecurity's cost per pod create, the
// namespace read excluded (it is a cache read NamespaceLifecycle makes
// too).
func BenchmarkValidatePodCreate(b *testing.B) {
	for _, bc := range []struct {
		name   string
		labels []string
	}{
		{"unlabeled", nil},
		{"enforce=restricted", []string{"pod-security.kubernetes.io/enforce", "restricted"}},
		{"enforce+audit+warn=restricted", []string{"pod-security.kubernetes.io/enforce", "restricted",
			"pod-security.kubernetes.io/audit", "restricted", "pod-security.kubernetes.io/warn", "restricted"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := newPlugin(b, namespaces{"a": ns("a", bc.labels...)})
			no, yes := false, true
			pod := privileged("x", "a")
			pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			}
			a := podCreate(pod)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.Validate(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

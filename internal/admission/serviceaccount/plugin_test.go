package serviceaccount

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// accounts is the plugin's input: ServiceAccounts by namespace/name, of
// which the "cache" sees only those marked cached (a create it has not
// seen yet is found only by a consistent read).
type accounts struct {
	mu     sync.Mutex
	all    map[string]*corev1.ServiceAccount
	cached map[string]bool
}

func (s *accounts) get(_ context.Context, ns, name string, consistent bool) (*corev1.ServiceAccount, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sa, ok := s.all[ns+"/"+name]
	if !ok || (!consistent && !s.cached[ns+"/"+name]) {
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
	}
	return sa, nil
}

func (s *accounts) add(sa *corev1.ServiceAccount, cached bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all[sa.Namespace+"/"+sa.Name] = sa
	s.cached[sa.Namespace+"/"+sa.Name] = cached
}

func admit(p *Plugin, pod *corev1.Pod) error {
	a := &admission.Attributes{Operation: admission.Create, Resource: podsResource, Namespace: "ns", Name: pod.Name, Object: pod}
	if err := p.Admit(context.Background(), a); err != nil {
		return err
	}
	return p.Validate(context.Background(), a)
}

func newPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "a"}, {Name: "b"}},
	}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestAdmit(t *testing.T) {
	no, yes := false, true
	store := &accounts{all: map[string]*corev1.ServiceAccount{}, cached: map[string]bool{}}
	store.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}, true)
	store.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet", Namespace: "ns"}, AutomountServiceAccountToken: &no,
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}}, true)
	store.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "fresh", Namespace: "ns"}}, false)
	p := New(store.get, Options{DefaultAttempts: 3, RetryInterval: func() time.Duration { return time.Millisecond }})

	tests := []struct {
		name    string
		pod     *corev1.Pod
		err     string
		mounted bool
		check   func(t *testing.T, pod *corev1.Pod)
	}{
		{name: "default account and volume", pod: newPod(), mounted: true, check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Spec.ServiceAccountName != "default" || pod.Spec.DeprecatedServiceAccount != "default" {
				t.Errorf("account %q/%q", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount)
			}
		}},
		{name: "missing account", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" }),
			err: `pods "p" is forbidden: error looking up service account ns/ghost: serviceaccounts "ghost" not found`},
		{name: "account the cache has not seen", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "fresh" }), mounted: true},
		{name: "account opts out, pull secrets copied", pod: newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }), check: func(t *testing.T, pod *corev1.Pod) {
			if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred" {
				t.Errorf("pull secrets %v", pod.Spec.ImagePullSecrets)
			}
		}},
		{name: "pod overrides account's opt-out", pod: newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "quiet"
			p.Spec.AutomountServiceAccountToken = &yes
			p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}}
		}), mounted: true, check: func(t *testing.T, pod *corev1.Pod) {
			if len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "mine" {
				t.Errorf("pod's own pull secrets replaced: %v", pod.Spec.ImagePullSecrets)
			}
		}},
		{name: "pod opts out", pod: newPod(func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &no })},
		{name: "a container mounting the path keeps its mount", pod: newPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "own"}}
			p.Spec.Containers[1].VolumeMounts = []corev1.VolumeMount{{Name: "own", MountPath: MountPath}}
		}), mounted: true, check: func(t *testing.T, pod *corev1.Pod) {
			if m := pod.Spec.Containers[1].VolumeMounts; len(m) != 1 || m[0].Name != "own" {
				t.Errorf("mounts %v", m)
			}
		}},
		{name: "mirror pod left alone", pod: newPod(func(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "x"} }), check: func(t *testing.T, pod *corev1.Pod) {
			if pod.Spec.ServiceAccountName != "" || len(pod.Spec.Volumes) != 0 {
				t.Errorf("mirror pod changed: %+v", pod.Spec)
			}
		}},
		{name: "mirror pod with account", pod: newPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.ServiceAccountName = "default"
		}), err: "a mirror pod may not reference service accounts"},
		{name: "mirror pod with secret", pod: newPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
			p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{}}}
		}), err: "a mirror pod may not reference secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := admit(p, tt.pod)
			if tt.err != "" {
				if err == nil || !apierrors.IsForbidden(err) || err.Error() != tt.err && !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want Forbidden %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkMounted(t, tt.pod, tt.mounted)
			if tt.check != nil {
				tt.check(t, tt.pod)
			}
		})
	}
}

func checkMounted(t *testing.T, pod *corev1.Pod, want bool) {
	t.Helper()
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if strings.HasPrefix(pod.Spec.Volumes[i].Name, VolumeNamePrefix) {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if (vol != nil) != want {
		t.Fatalf("token volume present %v, want %v", vol != nil, want)
	}
	if vol == nil {
		return
	}
	if len(vol.Name) != len(VolumeNamePrefix)+5 {
		t.Errorf("volume name %q", vol.Name)
	}
	src := vol.Projected
	if src == nil || len(src.Sources) != 3 || src.Sources[0].ServiceAccountToken.ExpirationSeconds == nil ||
		*src.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 || src.Sources[0].ServiceAccountToken.Path != "token" ||
		src.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || src.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
		t.Fatalf("projection %+v", src)
	}
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		found := false
		for _, m := range c.VolumeMounts {
			if m.MountPath == MountPath {
				found = true
				if m.Name == vol.Name && !m.ReadOnly {
					t.Errorf("container %s mounts the token read-write", c.Name)
				}
			}
		}
		if !found {
			t.Errorf("container %s does not mount %s", c.Name, MountPath)
		}
	}
}

// TestDefaultAccountCreatedMomentsLater: a pod created just after its
// namespace waits for the controller to create "default".
func TestDefaultAccountCreatedMomentsLater(t *testing.T) {
	store := &accounts{all: map[string]*corev1.ServiceAccount{}, cached: map[string]bool{}}
	var attempts int
	p := New(func(ctx context.Context, ns, name string, consistent bool) (*corev1.ServiceAccount, error) {
		if consistent {
			attempts++
			if attempts == 3 {
				store.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}, false)
			}
		}
		return store.get(ctx, ns, name, consistent)
	}, Options{RetryInterval: func() time.Duration { return time.Millisecond }})
	if err := admit(p, newPod()); err != nil {
		t.Fatalf("pod refused while default was being created: %v", err)
	}
	// Another name is looked for once only.
	attempts = 0
	if err := admit(p, newPod(func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" })); !apierrors.IsForbidden(err) || attempts > 2 {
		t.Fatalf("err %v after %d consistent reads", err, attempts)
	}
}

func BenchmarkAdmitPod(b *testing.B) {
	store := &accounts{all: map[string]*corev1.ServiceAccount{}, cached: map[string]bool{}}
	store.add(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}, true)
	p := New(store.get, Options{})
	b.ReportAllocs()
	for b.Loop() {
		if err := admit(p, newPod()); err != nil {
			b.Fatal(err)
		}
	}
}

package serviceaccount

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/myriad-k8s/myriad/internal/admission"
)

func TestEnforceMountableSecrets(t *testing.T) {
	store := &accounts{all: map[string]*corev1.ServiceAccount{}, cached: map[string]bool{}}
	store.add(&corev1.ServiceAccount{
		ObjectMeta:       metav1.ObjectMeta{Name: "strict", Namespace: "ns", Annotations: map[string]string{EnforceMountableSecretsAnnotation: "true"}},
		Secrets:          []corev1.ObjectReference{{Name: "allowed"}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
	}, true)
	store.add(&corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "lax", Namespace: "ns", Annotations: map[string]string{EnforceMountableSecretsAnnotation: "false"}},
	}, true)
	p := New(store.get, Options{DefaultAttempts: 1, RetryInterval: func() time.Duration { return time.Millisecond }})
	secretVolume := func(name string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}})
		}
	}
	envRef := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	account := func(name string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.ServiceAccountName = name } }

	tests := []struct {
		name string
		pod  *corev1.Pod
		err  string
	}{
		{"listed secret volume", newPod(account("strict"), secretVolume("allowed")), ""},
		{"unlisted secret volume", newPod(account("strict"), secretVolume("other")),
			`volume with secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"unlisted env secret in a container", newPod(account("strict"), func(p *corev1.Pod) { p.Spec.Containers[1].Env = envRef("other") }),
			`container b with envVar PASSWORD referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"unlisted envFrom secret in an init container", newPod(account("strict"), func(p *corev1.Pod) {
			p.Spec.InitContainers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}}
		}), `init container init with envFrom referencing secret.secretName="other" is not allowed because service account strict does not reference that secret`},
		{"listed env secret", newPod(account("strict"), func(p *corev1.Pod) { p.Spec.Containers[0].Env = envRef("allowed") }), ""},
		{"pull secrets copied from the account", newPod(account("strict")), ""},
		{"unlisted pull secret", newPod(account("strict"), func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "mine"}} }),
			`imagePullSecrets[0].name="mine" is not allowed because service account strict does not reference that imagePullSecret`},
		{"annotation false", newPod(account("lax"), secretVolume("other")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := admit(p, tt.pod)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error %v, want Forbidden with %q", err, tt.err)
			}
		})
	}
}

func TestEnforceMountableSecretsEphemeral(t *testing.T) {
	store := &accounts{all: map[string]*corev1.ServiceAccount{}, cached: map[string]bool{}}
	store.add(&corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "strict", Namespace: "ns", Annotations: map[string]string{EnforceMountableSecretsAnnotation: "true"}},
		Secrets:    []corev1.ObjectReference{{Name: "allowed"}},
	}, true)
	p := New(store.get, Options{})
	update := func(secret string) error {
		pod := newPod(func(p *corev1.Pod) {
			p.Spec.ServiceAccountName = "strict"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				Env: []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "k"}}}}}}}
		})
		a := &admission.Attributes{Operation: admission.Update, Resource: podsResource, Subresource: "ephemeralcontainers", Namespace: "ns", Name: pod.Name, Object: pod, OldObject: newPod()}
		if err := p.Admit(context.Background(), a); err != nil {
			return err
		}
		if len(pod.Spec.Volumes) != 0 {
			t.Errorf("an ephemeralcontainers update was mutated: volumes %v", pod.Spec.Volumes)
		}
		return p.Validate(context.Background(), a)
	}
	if err := update("allowed"); err != nil {
		t.Errorf("listed secret refused: %v", err)
	}
	if err := update("other"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `ephemeral container debug with envVar T referencing secret.secretName="other"`) {
		t.Errorf("unlisted secret: %v", err)
	}
	// A plain pod update is none of the plugin's business.
	a := &admission.Attributes{Operation: admission.Update, Resource: podsResource, Namespace: "ns", Name: "p", Object: newPod(), OldObject: newPod()}
	if err := p.Validate(context.Background(), a); err != nil {
		t.Errorf("pod update: %v", err)
	}
}

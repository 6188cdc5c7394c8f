package serviceaccount

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/myriad-k8s/myriad/internal/admission"
)

// Names and paths, as upstream's plugin spells them.
const (
	DefaultServiceAccountName = "default"
	// VolumeNamePrefix starts the name of the token volume added to pods.
	VolumeNamePrefix = "kube-api-access-"
	// MountPath is where containers find token, ca.crt and namespace.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenExpirationSeconds is the lifetime the kubelet asks for the
	// projected token: 3607, the "warn only" value the API server extends.
	TokenExpirationSeconds = 3607
	rootCAConfigMap        = "kube-root-ca.crt"
	mirrorPodAnnotation    = "kubernetes.io/config.mirror"
)

// Getter reads a ServiceAccount. consistent false may answer from a cache
// that has not seen a create acknowledged a moment ago; true must not. An
// absent account is an error for which apierrors.IsNotFound holds.
type Getter func(ctx context.Context, namespace, name string, consistent bool) (*corev1.ServiceAccount, error)

// Options tune the plugin; zero values take upstream's.
type Options struct {
	// DefaultAttempts is how many consistent reads look for the "default"
	// account before a pod is refused (upstream 10): the controller
	// creates it just after the namespace, and a pod created in the same
	// breath should wait for it rather than fail.
	DefaultAttempts int
	// RetryInterval is the wait between them (upstream 100–200 ms, random).
	RetryInterval func() time.Duration
}

// Plugin is the ServiceAccount admission plugin.
type Plugin struct {
	admission.Handler
	get  Getter
	opts Options
}

var (
	_ admission.MutationInterface   = (*Plugin)(nil)
	_ admission.ValidationInterface = (*Plugin)(nil)
)

var podsResource = corev1.SchemeGroupVersion.WithResource("pods")

// New is the plugin reading accounts through get.
func New(get Getter, opts Options) *Plugin {
	if opts.DefaultAttempts <= 0 {
		opts.DefaultAttempts = 10
	}
	if opts.RetryInterval == nil {
		opts.RetryInterval = func() time.Duration { return time.Duration(100+rand.IntN(100)) * time.Millisecond }
	}
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), get: get, opts: opts}
}

// podOf is the pod a create writes; ephemeral is set for an update of
// pods/ephemeralcontainers, the one update the plugin checks.
func podOf(a *admission.Attributes) (pod *corev1.Pod, ephemeral, ok bool) {
	if a.Resource != podsResource {
		return nil, false, false
	}
	switch {
	case a.Operation == admission.Create && a.Subresource == "":
	case a.Operation == admission.Update && a.Subresource == "ephemeralcontainers":
		ephemeral = true
	default:
		return nil, false, false
	}
	pod, ok = a.Object.(*corev1.Pod)
	return pod, ephemeral, ok
}

// Admit names the default account, mounts the token volume and copies
// image pull secrets.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	pod, ephemeral, ok := podOf(a)
	if !ok || ephemeral {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		// The kubelet deletes a mirror pod whose spec differs from its
		// manifest: never change one.
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
		pod.Spec.DeprecatedServiceAccount = DefaultServiceAccountName
	}
	sa, err := p.lookup(ctx, a.Namespace, pod.Spec.ServiceAccountName, true)
	if err != nil {
		return forbidden(a, pod, fmt.Sprintf("error looking up service account %s/%s: %v", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return nil
}

// Validate refuses a pod without an existing account, a mirror pod that
// references an account, secrets or a token projection, and, under an
// account with EnforceMountableSecretsAnnotation, a pod (or new ephemeral
// containers) using Secrets the account does not list.
func (p *Plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	pod, ephemeral, ok := podOf(a)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror && !ephemeral {
		return validateMirror(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return forbidden(a, pod, fmt.Sprintf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.lookup(ctx, a.Namespace, pod.Spec.ServiceAccountName, false)
	if err != nil {
		return forbidden(a, pod, fmt.Sprintf("error looking up service account %s/%s: %v", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if !enforceMountableSecrets(sa) {
		return nil
	}
	limit := limitSecretReferences
	if ephemeral {
		limit = limitEphemeralSecretReferences
	}
	if msg := limit(sa, pod); msg != "" {
		return forbidden(a, pod, msg)
	}
	return nil
}

// lookup reads the account from the cache, then consistently; with retry,
// the default account is looked for DefaultAttempts times.
func (p *Plugin) lookup(ctx context.Context, ns, name string, retry bool) (*corev1.ServiceAccount, error) {
	sa, err := p.get(ctx, ns, name, false)
	if err == nil || !apierrors.IsNotFound(err) {
		return sa, err
	}
	attempts := 1
	if retry && name == DefaultServiceAccountName {
		attempts = p.opts.DefaultAttempts
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(p.opts.RetryInterval())
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
		}
		sa, err = p.get(ctx, ns, name, true)
		if err == nil || !apierrors.IsNotFound(err) {
			return sa, err
		}
	}
	return nil, err
}

func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken // the pod's wish wins
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountToken mounts the token volume (an existing kube-api-access-* one,
// or a new one) in every container that mounts nothing at MountPath.
func mountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, VolumeNamePrefix) {
			name = v.Name
			break
		}
	}
	existing := name != ""
	if !existing {
		name = VolumeNamePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath}
	needed := false
	add := func(cs []corev1.Container) {
		for i := range cs {
			if !mountsAt(&cs[i], MountPath) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	add(pod.Spec.InitContainers)
	add(pod.Spec.Containers)
	if needed && !existing {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

func mountsAt(c *corev1.Container, path string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// TokenVolumeSource is the projected source of a kube-api-access volume.
// Its default mode is explicit because admission runs after defaulting.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptrTo(int64(TokenExpirationSeconds))}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{
				Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}

func validateMirror(a *admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" {
		return forbidden(a, pod, "a mirror pod may not reference service accounts")
	}
	if referencesSecrets(&pod.Spec) {
		return forbidden(a, pod, "a mirror pod may not reference secrets")
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return forbidden(a, pod, "a mirror pod may not use ServiceAccountToken volume projections")
			}
		}
	}
	return nil
}

// referencesSecrets reports whether spec names a Secret: image pull
// secrets, secret volumes and projections, and containers' env.
func referencesSecrets(spec *corev1.PodSpec) bool {
	if len(spec.ImagePullSecrets) > 0 {
		return true
	}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil:
			return true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					return true
				}
			}
		}
	}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					return true
				}
			}
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					return true
				}
			}
		}
	}
	return false
}

// forbidden is upstream's admission.NewForbidden for a pod.
func forbidden(a *admission.Attributes, pod *corev1.Pod, msg string) error {
	name := a.Name
	if name == "" {
		name = pod.Name
	}
	if name == "" {
		name = pod.GenerateName
	}
	return apierrors.NewForbidden(podsResource.GroupResource(), name, fmt.Errorf("%s", msg))
}

func ptrTo[T any](v T) *T { return &v }

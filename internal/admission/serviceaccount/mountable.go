package serviceaccount

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// EnforceMountableSecretsAnnotation on a ServiceAccount ("true") limits
// its pods to the Secrets its secrets field lists and the pull secrets
// its imagePullSecrets lists (deprecated upstream since v1.32, still
// honoured).
const EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

func enforceMountableSecrets(sa *corev1.ServiceAccount) bool {
	v, ok := sa.Annotations[EnforceMountableSecretsAnnotation]
	if !ok {
		return false
	}
	enforce, _ := strconv.ParseBool(v)
	return enforce
}

// mountableSecrets is the set of Secret names sa lets its pods use.
func mountableSecrets(sa *corev1.ServiceAccount) map[string]bool {
	names := make(map[string]bool, len(sa.Secrets))
	for _, s := range sa.Secrets {
		names[s.Name] = true
	}
	return names
}

// limitSecretReferences says why pod may not be created under sa (secret
// volumes, env and envFrom references, image pull secrets outside sa's
// lists), in upstream's words, or "" when it may.
func limitSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) string {
	allowed := mountableSecrets(sa)
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && !allowed[v.Secret.SecretName] {
			return fmt.Sprintf("volume with secret.secretName=%q is not allowed because service account %s does not reference that secret", v.Secret.SecretName, sa.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if msg := limitEnv("init container", c.Name, c.Env, c.EnvFrom, allowed, sa.Name); msg != "" {
			return msg
		}
	}
	for _, c := range pod.Spec.Containers {
		if msg := limitEnv("container", c.Name, c.Env, c.EnvFrom, allowed, sa.Name); msg != "" {
			return msg
		}
	}
	pull := make(map[string]bool, len(sa.ImagePullSecrets))
	for _, s := range sa.ImagePullSecrets {
		pull[s.Name] = true
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !pull[ref.Name] {
			return fmt.Sprintf("imagePullSecrets[%d].name=%q is not allowed because service account %s does not reference that imagePullSecret", i, ref.Name, sa.Name)
		}
	}
	return ""
}

// limitEphemeralSecretReferences is limitSecretReferences for the
// ephemeral containers added through pods/ephemeralcontainers.
func limitEphemeralSecretReferences(sa *corev1.ServiceAccount, pod *corev1.Pod) string {
	allowed := mountableSecrets(sa)
	for _, c := range pod.Spec.EphemeralContainers {
		if msg := limitEnv("ephemeral container", c.Name, c.Env, c.EnvFrom, allowed, sa.Name); msg != "" {
			return msg
		}
	}
	return ""
}

func limitEnv(kind, container string, env []corev1.EnvVar, envFrom []corev1.EnvFromSource, allowed map[string]bool, sa string) string {
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && !allowed[e.ValueFrom.SecretKeyRef.Name] {
			return fmt.Sprintf("%s %s with envVar %s referencing secret.secretName=%q is not allowed because service account %s does not reference that secret", kind, container, e.Name, e.ValueFrom.SecretKeyRef.Name, sa)
		}
	}
	for _, e := range envFrom {
		if e.SecretRef != nil && !allowed[e.SecretRef.Name] {
			return fmt.Sprintf("%s %s with envFrom referencing secret.secretName=%q is not allowed because service account %s does not reference that secret", kind, container, e.SecretRef.Name, sa)
		}
	}
	return ""
}

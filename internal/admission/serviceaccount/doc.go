// Package serviceaccount is upstream's ServiceAccount admission plugin.
// On pod create it
//
//   - names the "default" ServiceAccount when the pod names none (this is
//     not registry defaulting: mirror pods must keep none);
//   - refuses the pod (403) when its ServiceAccount does not exist, after
//     retrying a while for "default", which the serviceaccount controller
//     creates just after its namespace;
//   - unless the pod or its account opts out (automountServiceAccountToken),
//     adds the projected kube-api-access-<random> volume — a bound token
//     the kubelet requests for 3607 s, kube-root-ca.crt's ca.crt and the
//     namespace — mounted read-only at
//     /var/run/secrets/kubernetes.io/serviceaccount in every container and
//     init container that does not mount something there already;
//   - copies the account's imagePullSecrets to a pod that has none;
//   - leaves mirror pods alone, but refuses those that reference a
//     ServiceAccount, a Secret or a token projection;
//   - under an account annotated kubernetes.io/enforce-mountable-secrets:
//     "true", refuses pods (and ephemeral containers added through
//     pods/ephemeralcontainers) that use Secrets — volumes, env, envFrom,
//     image pull secrets — the account does not list.
package serviceaccount

// Package podsecurity is the PodSecurity admission plugin: it enforces,
// audits and warns about the Pod Security Standards (privileged, baseline,
// restricted) that a namespace's pod-security.kubernetes.io/enforce|audit|
// warn labels (and their -version labels) ask for, as upstream's plugin of
// the same name.
//
// The policy itself is upstream's library, k8s.io/pod-security-admission
// (its admission, policy and api packages): this package only adapts
// Myriad's admission attributes to it and delivers its three kinds of
// answer, as upstream's plugin (plugin/pkg/admission/security/podsecurity)
// wraps the same library:
//
//   - enforce: a refused pod is a 403 with the library's message
//     (pods "x" is forbidden: violates PodSecurity "restricted:latest": ...);
//   - warn: request.AddWarning, which the API server sends as Warning
//     headers (kubectl prints "Warning: ...");
//   - audit: request.AddAuditAnnotation with upstream's keys
//     (pod-security.kubernetes.io/audit-violations, .../enforce-policy,
//     .../exempt), for the audit log to carry.
//
// Workload resources with a pod template (deployments, jobs, cronjobs,
// replicasets, statefulsets, daemonsets, replicationcontrollers,
// podtemplates) are only warned about and audited, never refused, and a
// namespace whose enforce label is tightened warns about the pods in it
// that the new level would refuse — all as the library decides.
//
// Exemptions (usernames, namespaces, runtime classes) and the defaults for
// unlabeled namespaces come from a PodSecurityConfiguration
// (pod-security.admission.config.k8s.io/v1), which LoadAdmissionConfig
// reads out of --admission-control-config-file's AdmissionConfiguration.
package podsecurity

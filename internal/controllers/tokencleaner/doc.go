// Package tokencleaner is kube-controller-manager's tokencleaner
// controller: it deletes bootstrap token Secrets (kube-system, type
// bootstrap.kubernetes.io/token) once their expiration has passed, each
// at its own expiration (a delayed requeue), not on a poll. The
// authenticator refuses an expired token by itself; deleting the Secret
// is housekeeping, and takes the token's signature off cluster-info.
package tokencleaner

// Package serviceaccount is the service account controller: every active
// namespace has a ServiceAccount named "default", recreated if deleted
// (kube-controller-manager's "serviceaccount" controller).
package serviceaccount

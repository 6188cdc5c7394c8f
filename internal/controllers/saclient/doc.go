// Package saclient gives each controller of the controller manager a client
// that acts as the controller's own ServiceAccount in kube-system, as
// kube-controller-manager's --use-service-account-credentials: the
// replicaset controller writes as
// system:serviceaccount:kube-system:replicaset-controller, bound by the
// default RBAC policy to system:controller:replicaset-controller, so each
// controller holds only the rights its job needs.
//
// The manager's own identity (system:kube-controller-manager) creates the
// ServiceAccount when it is missing and asks the TokenRequest API
// (serviceaccounts/token) for short-lived tokens; the client refreshes a
// token at 80% of its life and at once after a 401 (the account was
// deleted and recreated), as upstream's DynamicControllerClientBuilder.
// Reads through the shared informers stay on the manager's identity.
package saclient

// Package webhook asks a remote service whether a request is allowed,
// as upstream's --authorization-mode=Webhook: it POSTs an
// authorization.k8s.io/v1 SubjectAccessReview to the service named by a
// kubeconfig file and turns the returned status into a decision.
//
// The work is upstream's own webhook authorizer
// (k8s.io/apiserver/plugin/pkg/authorizer/webhook): its caching of
// allowed and denied answers for separate TTLs, its retry backoff, its
// handling of an answer that both allows and denies. This package is the
// adapter between Myriad's authz.Attributes and upstream's
// authorizer.Attributes, and the configuration defaults of
// kube-apiserver's flags.
package webhook

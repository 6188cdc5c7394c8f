// Package webhook is the MutatingAdmissionWebhook and
// ValidatingAdmissionWebhook admission plugins: upstream's, from
// k8s.io/apiserver/pkg/admission/plugin/webhook/{mutating,validating},
// run unchanged in Myriad's chain through package upstream's adapter. They
// bring rules, namespace and object selectors, matchConditions (CEL),
// failurePolicy, timeouts, sideEffects and dry run, reinvocation, JSON
// patch, AdmissionReview v1 and v1beta1, warnings and upstream's metrics.
//
// What this package adds is what upstream's plugin initializers and
// server options would: the informers (fed from the watch caches), a
// namespace client for namespaces the informer has not seen yet, and a
// service resolver. There is no kube-proxy on the control plane, so a
// webhook's service reference resolves to one of the service's ready
// endpoints (an address from its EndpointSlices, chosen at random, as
// upstream's --enable-aggregator-routing does), while TLS still verifies
// the name <service>.<namespace>.svc.
//
// Webhook calls carry no client credentials: upstream's
// --admission-control-config-file kubeconfig (per-webhook client
// certificates or tokens) is not supported yet.
package webhook

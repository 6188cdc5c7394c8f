// Package upstream runs k8s.io/apiserver's admission plugins (the webhook
// plugins and ValidatingAdmissionPolicy) inside Myriad's admission chain:
// it turns Myriad's admission.Attributes into upstream's
// admission.Attributes once, for every such plugin, and gives them what
// upstream's plugin initializers would (object interfaces over the
// server's scheme, an authorizer, informers, an in-process client).
//
// # Informers and the in-process client
//
// The typed informers the plugins ask for (webhook configurations,
// policies, bindings, namespaces) are fed from the API server's watch
// caches through Server.ListerWatcher (InformerFactory pre-registers
// them in a client-go SharedInformerFactory, whose typed accessors then
// return them): no HTTP, no encoding, and the objects are the caches'.
// What the plugins reach through a client — a namespace not yet in the
// informer, ValidatingAdmissionPolicy's params of any kind (custom
// resources included, through a dynamic client and discovery) — goes to
// the server's own handler through an in-process RoundTripper
// (InProcessConfig), with a privileged identity, as upstream's loopback
// client does, but without a socket or a token.
//
// # Why the chain keeps its own interface
//
// Myriad's chain serves one version per resource, so the object
// interfaces' converter only copies between objects of one type; it never
// converts between versions. Reinvocation (upstream's reinvocation
// handler wraps the whole mutating chain) is done by Mutating for the
// plugin it wraps only: Myriad's built-in mutating plugins are idempotent
// and run before it, so rerunning them would change nothing.
package upstream

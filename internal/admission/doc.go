// Package admission decides, between a write's arrival and its storage,
// whether it may happen and what it finally stores: a chain of plugins the
// REST handlers call at fixed points, so new policy (webhooks,
// ValidatingAdmissionPolicy, ServiceAccount, NodeRestriction) is a plugin
// added to the chain, never a change to a handler.
//
// A write goes through the API server in this order (create, update,
// patch, delete, and the subresources binding, eviction, finalize, scale,
// status):
//
//	decode ─► defaults (registry strategy: PrepareForCreate/Update)
//	       ─► managed fields   the writer's fields (package patch)
//	       ─► Chain.Admit      mutating plugins, in order; may change Object
//	       ─► validation       registry strategy: Validate/ValidateUpdate
//	       ─► Chain.Allocate   allocating steps (ClusterIPs, node ports)
//	       ─► Chain.Validate   validating plugins; see the final object
//	       ─► storage write    compare-and-swap
//	       ─► Finish(written)  the allocations kept or given back
//
// as upstream's: managed fields before mutating admission, so what a
// plugin adds (a ServiceAccount's token volume, a webhook's patch) belongs
// to no manager, and managedFields a plugin left undecodable are put back
// as recorded; mutating admission before the strategy's validation,
// validating admission after it, allocation (upstream's BeginCreate /
// BeginUpdate registry hooks) between the two, so validating plugins see
// the addresses a Service got and nothing is allocated for a request the
// strategy refuses. A DELETE is admitted with neither object, then
// validated with the stored one as OldObject before it is removed or
// marked; an update is admitted again on every compare-and-swap attempt,
// against the object it is applied to. The server's own writes on its
// authority (a binding's pod update, finalize) are admitted as the
// subresource request that asked for them, as upstream.
//
// # Why not k8s.io/apiserver/pkg/admission
//
// The interfaces follow upstream's: Operation, Attributes,
// Handles(operation), a MutationInterface with Admit and a
// ValidationInterface with Validate, a chain that runs every mutating
// plugin, then every validating one. They are smaller in three ways
// (upstream's own plugins — webhooks, ValidatingAdmissionPolicy — run
// through the adapter in package upstream):
//
//   - Attributes is a struct, not an interface of getters: there is one
//     implementation, the handlers fill it in without an allocation per
//     getter, and a webhook plugin builds its AdmissionReview from the
//     fields as easily.
//   - No ObjectInterfaces argument: every object is the served version of
//     its Kind (Myriad serves one version per resource and never converts),
//     so plugins need no scheme to convert or default.
//   - No annotations or reinvocation in Attributes: package upstream
//     keeps them on upstream's attributes record for the one call, and
//     reinvokes the mutating webhooks itself.
//
// # Where this differs from upstream
//
// Upstream's mutating admission runs on the scheme-defaulted object before
// the strategy's PrepareForCreate/PrepareForUpdate. Myriad's registry
// strategy does both in one step, so the chain runs after it: plugins see
// defaulted objects, as upstream's do, but on an UPDATE the strategy has
// already decided whether the spec changed (metadata.generation) when a
// mutating plugin runs. Mutating webhooks do change updates: a webhook
// that changes the spec of an update that did not leaves generation
// where it was, until the registry's defaulting is split from its
// preparation. The same fusion is why the pod defaults that mirror
// admission plugins (DefaultTolerationSeconds, the ServiceAccount name,
// Priority without a class) stay in the registry: the strategy compares
// defaulted specs for generation. They are recorded in the creator's
// managed fields, where upstream, whose plugins add them, records them in
// no one's.
//
// AllocationInterface has no upstream counterpart in this package: it is
// the registry's begin/finish hook pair, run by the chain so that the
// handlers call one thing at one place (see its comment and package
// serviceip).
//
// The plugins live in subpackages, one each: namespacelifecycle,
// limitranger, podsecurity (PodSecurity), priority, defaultclass
// (DefaultStorageClass and DefaultIngressClass, one plugin built twice),
// storageprotection,
// runtimeclass, certsubject (CertificateSubjectRestriction), serviceip,
// resourcequota (which also allocates: its Finish gives back the quota
// charged for a write that was not stored), webhook
// (MutatingAdmissionWebhook, ValidatingAdmissionWebhook) and policy
// (ValidatingAdmissionPolicy), the last two on k8s.io/apiserver's plugins
// through package upstream. The API server builds the chain
// (internal/apiserver, admission.go) because the plugins read through its
// stores and caches.
package admission

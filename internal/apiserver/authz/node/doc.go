// Package node is the Node authorizer: it lets a kubelet, identified as
// "system:node:<name>" in group "system:nodes", read the Secrets,
// ConfigMaps, PersistentVolumeClaims, PersistentVolumes, ResourceClaims and
// ServiceAccount tokens of the pods bound to it, and nothing of any other
// node's pods, as upstream's plugin/pkg/auth/authorizer/node.
//
// Decisions follow upstream's split exactly: the authorizer subdivides the
// resources it knows (secrets, configmaps, PVCs, PVs, resource claims,
// volume attachments, service accounts, leases, CSINodes, resource slices,
// nodes and pods), answers every other request of a node by the static
// rules of upstream's system:node role, and has no opinion on anyone who
// is not a node. What a node may write to its own Node, pods, Lease and
// CSINode is narrowed further by the NodeRestriction admission plugin
// (internal/admission/noderestriction).
//
// The graph of which object leads to which node is kept incrementally from
// the server's watch caches (reflectors over Server.ListerWatcher, with the
// graph as their store, so no copy of any pod is kept): a pod is one vertex
// holding its node and the objects it references, and each referenced
// object counts, per node, the pods that lead there. An authorization is a
// couple of map lookups under a read lock; memory is a few hundred bytes a
// pod.
//
// The Ant Group report in the seeds describes kubelets blocked while the
// graph was rebuilt after an apiserver restart. Here the graph registers a
// readiness check (Server.AddReadinessCheck), so /readyz says ready only
// once every reflector has listed; and a request the graph cannot yet
// allow is answered 429 with Retry-After (client-go retries it) instead of
// 403, so a node is never denied because the server has just started.
package node

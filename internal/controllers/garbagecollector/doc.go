// Package garbagecollector is the garbage collector: it deletes objects
// whose owners (metadata.ownerReferences) are gone, and carries out the
// propagation policies the API server records as finalizers —
// foregroundDeletion (delete the dependents, wait for those with
// blockOwnerDeletion, then release the owner) and orphan (remove the
// dependents' references to the owner, then release it).
//
// Unlike upstream's in-memory graph, the relation is kept as an index on
// metadata-only informers, one per discovered resource that supports
// list, watch and delete: "dependents of UID u" is one index lookup per
// resource, "does owner X exist" a cache lookup confirmed by a live GET
// before anything is deleted. The informers start while the process is a
// standby (Warm), so the relation is complete the moment it leads.
package garbagecollector

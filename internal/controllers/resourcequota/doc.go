// Package resourcequota is upstream's resource quota controller: it
// keeps every ResourceQuota's status.hard equal to spec.hard and
// status.used equal to what the namespace's objects use of each hard
// resource, counted by the same evaluators (internal/quota) as the
// ResourceQuota admission plugin charges with.
//
// A quota is recounted when it is created or its spec changes, when an
// object it tracks goes away or uses less (a deleted object, a pod
// turning terminal, a Service changing type), and every ResyncPeriod.
// Creations are not recounted: admission charged them before they were
// stored, and a recount from informers that have not seen a just-charged
// object yet would hand its share to the next request (upstream's
// "replenishment" controller makes the same choice). Recounts of a
// namespace are coalesced by the queue, after a short delay, so deleting
// a thousand pods costs a few recounts, not a thousand.
//
// Pods, Services, PersistentVolumeClaims and ResourceQuotas are counted
// from the shared typed informers; count/<resource>.<group> of any other
// served resource (and the legacy configmaps, secrets and
// replicationcontrollers) from a metadata informer started the first
// time a quota names it, so a resource the API server does not serve
// costs nothing until a quota asks for it, and counting ConfigMaps and
// Secrets does not keep their data.
package resourcequota
